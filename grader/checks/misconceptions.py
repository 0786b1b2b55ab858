"""The catalogue of misconceptions the hidden tests recognise.

Every assertion message that names a misconception starts its last paragraph
with ``Likely cause [<code>]:`` so feedback, statistics and the dashboard can
count them without parsing prose.  The texts explain the mistake; they never
contain an expected value.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Misconception:
    code: str
    explanation: str

    def __str__(self) -> str:
        return f"Likely cause [{self.code}]: {self.explanation}"


GRAD_ACCUMULATED = Misconception(
    "grad-not-zeroed",
    "gradients accumulate across backward() calls; clear them (p.grad = None "
    "or p.grad.zero_()) once per step, before the next backward().",
)
GRAD_ZEROED_BEFORE_UPDATE = Misconception(
    "grad-zeroed-before-update",
    "the gradients were cleared between backward() and the update, so the "
    "update used zeros; clear them after the update or before backward().",
)
SUM_NOT_MEAN = Misconception(
    "sum-instead-of-mean",
    "the loss is a mean, but the gradient is a whole number of times too "
    "large, as if the loss used sum(); divide by the number of elements "
    "(mean()).",
)
UPDATE_TRACKED = Misconception(
    "update-outside-no-grad",
    "the parameter update was recorded by autograd (it gained a grad_fn or "
    "stopped being a leaf); update parameters in place inside "
    "`with torch.no_grad():`.",
)
PARAM_REPLACED = Misconception(
    "param-replaced",
    "the update built a new tensor instead of changing the caller's parameter; "
    "update in place (w -= lr * w.grad) inside `with torch.no_grad():`.",
)
GRAPH_CUT = Misconception(
    "graph-cut",
    ".item(), float(), .detach() or a NumPy round trip inside the computation "
    "leaves the autograd graph, so backward() cannot reach the inputs; keep "
    "every step a torch operation on tensors.",
)
GRAD_READ_BEFORE_BACKWARD = Misconception(
    "grad-before-backward",
    ".grad is None until backward() has run; call backward() on the scalar loss first, then read .grad.",
)
INTEGER_REQUIRES_GRAD = Misconception(
    "integer-requires-grad",
    "only floating-point (or complex) tensors can require gradients; create "
    "the tensor with a float dtype such as torch.float32.",
)
DTYPE_CHANGED = Misconception(
    "dtype-changed",
    "the function changed the dtype of its input (float32 in, float64 out or "
    "the reverse); build new tensors with dtype=x.dtype, and convert NumPy data "
    "to the weights' dtype (.to(weight.dtype)) before mixing them.",
)
DEVICE_NOT_KEPT = Misconception(
    "device-not-kept",
    "the function creates tensors on the CPU regardless of where its input "
    "lives (or moves only some operands); create new tensors with "
    "device=x.device, or use helpers like torch.zeros_like(x).",
)
UNINTENDED_BROADCAST = Misconception(
    "unintended-broadcast",
    "two operands with different shapes, such as (N,) and (N, 1), were "
    "broadcast into an (N, N) matrix; make the shapes agree (squeeze or "
    "reshape) before combining them.",
)
VIEW_NON_CONTIGUOUS = Misconception(
    "view-non-contiguous",
    ".view() only works on contiguous memory; a transposed or permuted input "
    "needs .reshape() (or .contiguous() first).",
)
INPUT_MUTATED = Misconception(
    "input-mutated",
    "the function changed the caller's input in place; compute a new tensor instead of editing the argument.",
)
HARD_CODED = Misconception(
    "hard-coded",
    "the function gives the right answer for the visible example but not for "
    "other inputs; compute the result from the arguments instead of "
    "returning fixed numbers.",
)
NOT_MANUAL = Misconception(
    "not-manual",
    "this task asks for the hand-written computation; torch.optim, nn.Linear, "
    "nn.MSELoss / F.mse_loss and torch.linalg solvers do the work for you here.",
)
NO_GRAD_TRACKED = Misconception(
    "graph-recorded-in-inference",
    "inference should run under torch.no_grad() or torch.inference_mode(); "
    "the result still records a graph.  (model.eval() is not a gradient "
    "mode: it only changes layers such as dropout.)",
)
NOT_A_LEAF = Misconception(
    "not-a-leaf",
    "a trainable tensor must be a leaf: create it with requires_grad=True (or "
    "call .requires_grad_() on a fresh float tensor); a tensor computed from "
    "another one has a grad_fn, and its .grad stays None after backward().",
)
GRAD_DISABLED_GLOBALLY = Misconception(
    "grad-disabled-globally",
    "torch.set_grad_enabled(False) switches gradient recording off for the "
    "whole program, so later training code records no graph; wrap only the "
    "inference in `with torch.no_grad():` or `with torch.inference_mode():`.",
)
NUMPY_NOT_DETACHED = Misconception(
    "numpy-needs-detach-cpu",
    ".numpy() refuses tensors that require grad or live on another device; use .detach().cpu().numpy().",
)
NUMPY_COPY = Misconception(
    "numpy-copied",
    "torch.from_numpy() shares memory with the array; torch.tensor() and "
    "torch.as_tensor(..., dtype=other) make a copy.",
)

GRAD_ZEROED_BEFORE_READ = Misconception(
    "grad-zeroed-before-read",
    "the gradients were cleared after backward() but before they were read, so "
    "the function reports zeros; read (or clone) .grad first, and clear it before "
    "the next backward().",
)
REQUIRES_GRAD_CHANGED = Misconception(
    "requires-grad-changed",
    "the function switched requires_grad of the caller's tensor (requires_grad_() "
    "or .requires_grad = ...); work on a copy (x.detach().clone().requires_grad_()) "
    "and leave the argument as it came.",
)
DERIVATIVE_BY_HAND = Misconception(
    "derivative-by-hand",
    "this task asks autograd to compute the gradient; a derivative written out by "
    "hand gives no grad_fn and breaks as soon as the function changes; build the "
    "value from the input with torch operations and call backward().",
)
ARGUMENT_IGNORED = Misconception(
    "argument-ignored",
    "the function ignores one of its arguments (a learning rate, a number of steps, "
    "a size) and uses a fixed value instead; every call must use the value it is given.",
)
GRADIENT_ASCENT = Misconception(
    "gradient-ascent",
    "the update moves along the gradient instead of against it, so the loss grows; "
    "gradient descent subtracts: w -= lr * w.grad.",
)
STATE_BETWEEN_CALLS = Misconception(
    "state-between-calls",
    "something from an earlier call (a reused leaf tensor, a module-level "
    "variable, a .grad never cleared) changes the result of the next call; build "
    "fresh tensors inside the function for every call.",
)
WRONG_DIM = Misconception(
    "wrong-dim",
    "the reduction or reshape ran over the wrong dimension; name the dimension you "
    "mean (dim=0 is the batch in an (N, C, H, W) tensor) and check the result's shape.",
)
CHANNELS_LAST = Misconception(
    "channels-last",
    "the code treats an (N, C, H, W) batch as (N, H, W, C) (or the reverse); in "
    "PyTorch images are channels-first: channel is dimension 1.",
)
VAGUE_ERROR = Misconception(
    "error-message-vague",
    "the error raised does not say what was wrong; a ValueError must name the "
    "shapes it received, so the caller can fix the call.",
)
SHAPE_MISMATCH = Misconception(
    "shape-mismatch",
    "two tensors whose shapes do not fit were combined; print the shape of every "
    "operand and compare it with the shapes the task states.",
)

SCALAR_AS_VECTOR = Misconception(
    "scalar-as-vector",
    "a scalar has shape (): write torch.tensor(3.0); torch.tensor([3.0]) is a vector of shape (1,).",
)

TOKEN_IDS_NOT_INTEGER = Misconception(
    "token-ids-not-integer",
    "token ids index the rows of an embedding table, so they are integers "
    "(torch.int64, what torch.randint returns), not floats.",
)

TOKEN_ID_OUT_OF_RANGE = Misconception(
    "token-id-out-of-range",
    "with a vocabulary of V tokens the ids are 0, 1, ..., V - 1; "
    "torch.randint(low, high, size) draws from [low, high), high excluded.",
)

SHAPE_NOT_CHECKED = Misconception(
    "shape-not-checked",
    "the function does not check the shapes it was given, so a torch error (or a "
    "result of the wrong size) decides instead; check them yourself and raise "
    "ValueError, naming both shapes, before any arithmetic.",
)

RESIDUAL_SIGN_FLIPPED = Misconception(
    "residual-sign-flipped",
    "a residual is prediction minus target; target minus prediction flips the sign of every element.",
)

COLUMN_NOT_SQUEEZED = Misconception(
    "column-not-squeezed",
    "the result keeps an (N, 1) column where the task asks for a vector of shape (N,); "
    "squeeze(1) or reshape(-1) the column away before (or after) combining.",
)

# --- ps1_tensors (new codes for this assignment go above this line) ---

TENSOR_NOT_FLOAT = Misconception(
    "tensor-instead-of-float",
    "the task asks for a Python float, and a tensor is not one; convert the "
    "one-element result with .item() (or float()) at the very end, after backward().",
)
# --- ps2_autograd (new codes for this assignment go above this line) ---

RANDOM_DRAW_ORDER = Misconception(
    "random-draw-order",
    "the numbers come from the right seed but are drawn in another order; the task fixes the "
    "order: seed once, draw footfall with torch.rand first, then the noise with torch.randn, "
    "from the same random stream.",
)

SHARED_PARAMETER = Misconception(
    "shared-parameter",
    "w and b are one and the same tensor returned twice, so every update of one "
    "changes the other and their gradients add up; create each parameter with its "
    "own torch.zeros(...) call.",
)

# --- ps3_regression (new codes for this assignment go above this line) ---

BACKWARD_WRONG_DERIVATIVE = Misconception(
    "backward-wrong-derivative",
    "backward() does not return grad_output times the derivative of what forward() computes; "
    "derive dy/dx on paper, and compare with torch.autograd.gradcheck on float64 inputs that "
    "require grad.",
)

GRAD_OUTPUT_IGNORED = Misconception(
    "grad-output-ignored",
    "backward() returns the local derivative dy/dx without multiplying it by grad_output (dL/dy, "
    "the gradient arriving from later operations); that is right only when grad_output is all "
    "ones, as after y.sum().backward(). Return grad_output * dy/dx.",
)

BACKWARD_GRADIENT_COUNT = Misconception(
    "backward-gradient-count",
    "backward() returns one value per argument of forward() after ctx, in the same order: a "
    "gradient shaped like each tensor argument, and None for every argument that is not a tensor "
    "(a Python number such as slope).",
)

NOT_SAVED_FOR_BACKWARD = Misconception(
    "not-saved-for-backward",
    "a tensor kept as an attribute of ctx (ctx.x = x) escapes autograd's checks: when the caller "
    "changes x in place between forward and backward, backward silently uses the new values; "
    "save tensors with ctx.save_for_backward(x) and read them back from ctx.saved_tensors.",
)

BACKWARD_NOT_DIFFERENTIABLE = Misconception(
    "backward-not-differentiable",
    "backward() computed its result outside autograd (under torch.no_grad(), or from detached "
    "tensors), so the gradient cannot itself be differentiated (create_graph=True, second "
    "derivatives, torch.autograd.gradgradcheck); build it from grad_output and ctx.saved_tensors "
    "with ordinary torch operations.",
)

SAVED_NON_TENSOR = Misconception(
    "save-non-tensor",
    "ctx.save_for_backward() accepts only tensors (or None); keep a Python number such as slope "
    "as a plain attribute (ctx.slope = slope).",
)

GRADIENT_SHAPE = Misconception(
    "gradient-shape",
    "backward() must return, for each tensor argument, a gradient with exactly that argument's "
    "shape (element by element, grad_output times the local derivative); do not sum, transpose or "
    "flatten it.",
)

SUPER_INIT_MISSING = Misconception(
    "super-init-missing",
    "an nn.Module subclass must call super().__init__() at the start of its __init__, before it "
    "assigns any parameter, buffer or submodule.",
)

PARAM_AS_PLAIN_TENSOR = Misconception(
    "param-as-plain-tensor",
    "a tensor assigned to a module attribute, even with requires_grad=True, is not registered: "
    "it is missing from parameters() (so an optimizer never trains it), from state_dict() and "
    "from .to(); wrap trainable tensors in nn.Parameter(...).",
)

BUFFER_VS_PARAMETER = Misconception(
    "buffer-vs-parameter",
    "parameters (nn.Parameter) are what the optimizer trains; buffers (self.register_buffer(name, "
    "tensor)) are state that is saved and moved with the module but not trained, such as "
    "statistics of the data. This tensor is registered as the wrong kind.",
)

BUFFER_NOT_REGISTERED = Misconception(
    "buffer-not-registered",
    "state that belongs to a module but is not trained (statistics, constants) must be registered "
    "with self.register_buffer(name, tensor): then .to() and .double() move it and state_dict() "
    "saves it; a plain tensor attribute (or a buffer with persistent=False) gets left behind.",
)

DEVICE_FIXED_AT_INIT = Misconception(
    "device-fixed-at-init",
    "the module remembers a device (or dtype) from __init__, but .to() moves only parameters and "
    "buffers, never such an attribute; inside forward() read where the module lives from its "
    "tensors (self.weight.device) or simply from the input.",
)

BATCH_STATISTICS = Misconception(
    "batch-stats-instead-of-buffers",
    "forward() standardises with the statistics of the batch it was given instead of the ones "
    "stored in the module's buffers; the stored statistics make a prediction independent of what "
    "else is in the batch, even for a batch of one.",
)

STATE_SHARES_MEMORY = Misconception(
    "state-shares-memory",
    "state_dict() returns the module's live tensors, not copies: they change whenever the model "
    "trains. A snapshot needs copies (t.detach().clone(), copy.deepcopy), and restoring must copy "
    "values into the model (load_state_dict, p.copy_(t)) rather than make the model use the "
    "snapshot's tensors (p.data = t, assign=True).",
)

PARAMETERS_ONLY_STATE = Misconception(
    "parameters-only-state",
    "named_parameters() holds no buffers; a module's complete state is model.state_dict(): every "
    "parameter and every persistent buffer, under its full name ('0.weight' for a submodule).",
)

LOAD_NOT_STRICT = Misconception(
    "load-not-strict",
    "a state that does not fit the model (a key missing, an extra key, another shape) was loaded "
    "without complaint; load_state_dict(state) is strict by default and raises, while "
    "strict=False or a loop over only some keys silently leaves parameters as they were.",
)

LOAD_REPLACES_PARAMETERS = Misconception(
    "load-replaces-parameters",
    "restoring replaced the model's Parameter objects with new tensors; an optimizer built "
    "before still holds the old ones and would train tensors the model no longer uses. Copy the "
    "values in place: model.load_state_dict(state), or p.copy_(t) under torch.no_grad().",
)

# --- ps4_functions (new codes for this assignment go above this line) ---

ALL: tuple[Misconception, ...] = tuple(value for value in globals().values() if isinstance(value, Misconception))
