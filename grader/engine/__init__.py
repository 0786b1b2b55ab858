"""The fast grading engine: nbgrader's autograde pipeline with kernels forked from a warm zygote.

zygote.py        the process that imports torch once and forks one child per notebook
shell.py         inside a child: IPython's shell running the cells
recorder.py      inside a child: outputs recorded as ipykernel publishes them
protocol.py      length-prefixed JSON between the grader and a child
kernel.py        the grader's side: start the zygote, fork a kernel from it
forked.py        the grader's side of one kernel: run a cell with a timeout
preprocessor.py  ForkExecute, which takes nbgrader Execute's place in Autograde
early.py         the grading's kernel, forked while nbgrader does its bookkeeping; ForkExecute takes it
autograde.py     nbgrader's Autograde converter, in-process, one or many submissions
onepass.py       that converter's two passes over a notebook, handed over in memory
batch.py         ``grader autograde``: here, or on the warm engine a running ``grader serve`` lends (lend.py)
"""
