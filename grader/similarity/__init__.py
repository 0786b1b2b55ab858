"""Similarity: pairs of submissions whose answer code looks copied, for a TA to look at.

The scheme, as MOSS and ``copydetect`` do it (the fingerprinting is ``copydetect``'s):

1. **What is compared** (``sources``): each student's answer cells (nbgrader ``solution`` cells,
   by grade id), joined in the release's order. Nothing else of the notebook counts: not the
   statements, not the provided or test cells.
2. **Normalised tokens**: Python tokens with every name written ``V``, function names ``F``, class
   names ``O`` and string contents ``S``; comments and whitespace dropped. Renaming variables,
   editing comments and re-spacing change nothing.
3. **Winnowed fingerprints**: hashes (BLAKE2b, the same in every process, unlike Python's ``hash()``) of
   every run of ``k`` normalised characters, of which the smallest in each window of ``w`` is kept.
   Fingerprints form a set, so reordering functions or cells changes nothing either.
4. **Boilerplate**: fingerprints of the release's starter code and of the instructor's own solution
   are removed from every submission. A correct answer written the instructor's way is therefore
   not evidence of copying, and two notebooks that share only the starter code score 0.
5. **The pair's score** (``compare``): of the smaller side's remaining fingerprinted code, the
   share that the other side has too; one answer cell copied whole counts as that cell's share, and
   the report names the cells where the match lies. A pair is listed at or above a threshold the TA
   chooses; nothing here changes a grade.
"""
