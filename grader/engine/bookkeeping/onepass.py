"""nbgrader's ``Autograde`` with its two passes over a notebook handed from one to the other in memory.

Stock ``Autograde.convert_single_notebook`` runs nbconvert twice per notebook: the sanitize
preprocessors (ClearOutput ... OverwriteCells, CheckCellMetadata) read the submitted file and
write it to ``autograded/``; then the autograde preprocessors (Execute ... SaveAutoGrades,
AssignLatePenalties) read that file back and write it again.  Each nbconvert pass also deep-copies
the notebook three times (the exporter, its preprocess loop, nbformat's ``normalize``) and
nbformat's writer once more.  In the engine that was some 18 ms of CPU per notebook, all of it
under the bookkeeping lock, for a file nobody reads in between.

``OnePassAutograde`` runs the very same preprocessor instances, in the same order, with the same
``resources`` each pass starts from, and hands the sanitized notebook to the second pass as
nbformat would read it back from the file stock nbgrader writes (JSON, sorted keys, lines
rejoined, transient fields stripped), without the file.  Each pass still begins with nbformat's
``normalize`` and ends with nbconvert's validation, so a notebook nbgrader would refuse after the
sanitize pass is refused there too, before anything runs.  Each pass owns the notebook it is
given (just read from the file, or read back), so ``normalize`` repairs it in place, without the
deep copy nbformat's public function makes to spare its caller's object; nbformat's writer still
copies the autograded notebook, which ``rows`` hands to the caller.  Only the autograded notebook is
written, once, as the stock second pass writes it.  The engine's tests compare every fixture's
autograded notebook, scores and gradebook rows with stock ``nbgrader autograde``'s.

It uses three members of nbconvert's ``Exporter`` that nbgrader 0.9 relies on as well
(``_preprocessors``, ``_init_resources``, ``_validate_preprocessor``), and nbformat's
``validator._normalize`` where it has one.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from typing import Any

import nbformat
from nbformat import validator
from nbformat.v4.nbjson import BytesEncoder
from nbformat.v4.rwbase import rejoin_lines, strip_transient
from nbgrader import utils
from nbgrader.converters import Autograde

from . import faults


def read_back(nb: Any) -> Any:
    """``nb`` as ``nbformat.read`` returns it from the file nbformat's writer makes of it."""
    text = json.dumps(nb, cls=BytesEncoder, sort_keys=True, ensure_ascii=False)
    return strip_transient(rejoin_lines(nbformat.from_dict(json.loads(text))))  # type: ignore[no-untyped-call]


class OnePassAutograde(Autograde):  # type: ignore[misc]
    """``nbgrader autograde``'s converter; the sanitized notebook goes to the autograde pass in memory.

    Each step it runs is ``faults.attributed``: one that raises is noted as the student's doing or ours
    before nbgrader's ``convert_notebooks`` swallows the exception."""

    def init_destination(self, assignment_id: str, student_id: str) -> bool:
        with faults.attributed("nbgrader's Autograde.init_destination (the autograded/ folder)"):
            return bool(super().init_destination(assignment_id, student_id))

    def init_assignment(self, assignment_id: str, student_id: str) -> None:
        with faults.attributed("nbgrader's Autograde.init_assignment (the student's submission in the gradebook)"):
            super().init_assignment(assignment_id, student_id)

    def set_permissions(self, assignment_id: str, student_id: str) -> None:
        with faults.attributed("nbgrader's set_permissions (the autograded/ folder)"):
            super().set_permissions(assignment_id, student_id)

    def run_post_convert_hook(self) -> None:
        with faults.attributed("the course's post_convert_hook"):
            super().run_post_convert_hook()

    def write_single_notebook(self, output: str, resources: dict[str, Any]) -> None:
        with faults.attributed("writing the autograded notebook"):
            super().write_single_notebook(output, resources)

    def convert_single_notebook(self, notebook_filename: str) -> None:
        self.log.info("Sanitizing %s", notebook_filename)
        self._sanitizing = True
        self._init_preprocessors()
        self.log.info("Converting notebook %s", notebook_filename)
        resources = self.init_single_notebook_resources(notebook_filename)
        _describe(resources, notebook_filename, os.path.getmtime(notebook_filename))
        with faults.reading(), open(notebook_filename, encoding="utf-8") as f:
            nb = nbformat.read(f, as_version=4)  # type: ignore[no-untyped-call]
        nb, resources = self._pass(nb, resources)

        build = self._format_dest(resources["nbgrader"]["assignment"], resources["nbgrader"]["student"])
        notebook_filename = os.path.join(build, os.path.basename(notebook_filename))
        self.log.info("Autograding %s", notebook_filename)
        self._sanitizing = False
        self._init_preprocessors()
        try:
            self.log.info("Converting notebook %s", notebook_filename)
            resources = self.init_single_notebook_resources(notebook_filename)
            _describe(resources, notebook_filename, dt.datetime.now(dt.UTC).timestamp())
            with utils.setenv(NBGRADER_EXECUTION="autograde"):
                nb, resources = self._pass(read_back(nb), resources)
        finally:
            self._sanitizing = True
        self.write_single_notebook(self._output(nb, resources), resources)

    def _pass(self, nb: Any, resources: dict[str, Any]) -> tuple[Any, Any]:
        """nbconvert's ``Exporter.from_notebook_node`` and ``_preprocess`` on a notebook this pass owns."""
        exporter = self.exporter
        resources = exporter._init_resources(resources)
        if "language" in nb["metadata"]:
            resources["language"] = nb["metadata"]["language"].lower()
        if hasattr(validator, "normalize"):
            nb = _normalized(nb)
        sanitizing = bool(getattr(self, "_sanitizing", False))
        stage = "sanitize" if sanitizing else "autograde"
        preprocessor = None
        for preprocessor in exporter._preprocessors:
            with faults.attributed(f"the {stage} step {_name(preprocessor)}", sanitizing):
                nb, resources = preprocessor(nb, resources)
                if not exporter.optimistic_validation:
                    exporter._validate_preprocessor(nb, preprocessor)
        if exporter.optimistic_validation:
            with faults.attributed(f"nbformat's validation after the {stage} pass", sanitizing):
                exporter._validate_preprocessor(nb, preprocessor)
        return nb, resources

    def _output(self, nb: Any, resources: dict[str, Any]) -> str:
        """``NotebookExporter.from_notebook_node``'s text and output suffix."""
        version = self.exporter.nbformat_version
        resources["output_suffix"] = f".v{version}" if version != nb.nbformat else ".nbconvert"
        converted = nbformat.convert(nb, version)  # type: ignore[no-untyped-call]
        if converted is nb:  # as nbformat.writes, less its validation: the pass's last step just validated nb
            output: str = nbformat.versions[version].writes_json(nb)
        else:
            output = nbformat.writes(nb, version=version)  # type: ignore[no-untyped-call]
        return output if output.endswith("\n") else output + "\n"


def _name(step: Any) -> str:
    kind = type(step)
    return f"{kind.__module__}.{kind.__qualname__}"


def _normalized(nb: Any) -> Any:
    """nbformat's ``normalize`` of a notebook the pass owns (just read from the file, or read back), without
    the deep copy ``normalize`` makes first to spare its caller's object: the same repairs, on ``nb`` itself."""
    in_place = getattr(validator, "_normalize", None)
    if in_place is None:  # another nbformat: its public function, copy and all
        return validator.normalize(nb)[1]
    version, minor = validator.get_version(nb)  # type: ignore[attr-defined,no-untyped-call]
    return in_place(nb, version, minor, True, relax_add_props=False, strip_invalid_metadata=False)[1]


def _describe(resources: dict[str, Any], filename: str, modified: float) -> None:
    """The ``metadata`` nbconvert's ``Exporter.from_filename`` puts in ``resources``."""
    path, basename = os.path.split(filename)
    stamp = dt.datetime.fromtimestamp(modified, tz=dt.UTC)
    resources["metadata"] = {
        "name": os.path.splitext(basename)[0],
        "path": path,
        "modified_date": stamp.strftime("%B %-d, %Y"),
    }
