"""Every documentation page is checked against the code: README.md, DEVELOPMENT.md and docs/.

Python examples that are DAG files are imported by Airflow and their typed parameters built into a
valid TFJob; the other Python blocks run, or, when they are fragments that use names defined
elsewhere, have their imports resolved; YAML and JSON blocks parse and TFJob manifests validate.
Links and their anchors, repository paths, dotted names, ``make`` targets and the pages that
source files cite resolve, and the tables that restate the code (restart policy x exit code,
parameters, configuration options, troubleshooting messages) are recomputed from it.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import inspect
import json
import re
import symtable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.dagbag import parse_dag_folder
from tests.docs_pages import (
    ROOT,
    Block,
    anchors,
    blocks,
    inline_code,
    links,
    pages,
    section,
    table_header,
    table_rows,
)
from tests.unit.factories import make_pod, make_tfjob
from tfjob_provider.policy import VerdictState, decide

PAGES = pages()
README = Path("README.md")
RULES = Path("docs/concepts/rules.md")
OPERATOR_REFERENCE = Path("docs/reference/operator.md")
CONFIGURATION = Path("docs/reference/configuration.md")
TROUBLESHOOTING = Path("docs/guides/troubleshooting.md")
MANIFESTS_GUIDE = Path("docs/guides/manifests.md")

PYTHON_BLOCKS = [block for page in PAGES for block in blocks(page, "python")]
DAG_BLOCKS = [block for block in PYTHON_BLOCKS if "with DAG(" in block.text or "@dag" in block.text]
OTHER_PYTHON_BLOCKS = [block for block in PYTHON_BLOCKS if block not in DAG_BLOCKS]


def _ids(items: list[Block]) -> list[str]:
    return [block.where for block in items]


# --- Python: DAG files --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def documented_dags(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every DAG block as a file of one DAG folder, parsed once: {block location: its DAG}."""
    folder = tmp_path_factory.mktemp("docs_dags")
    # The manifests guide's YAML TFJob is the file its DAG example names.
    (manifest,) = [block for block in blocks(MANIFESTS_GUIDE, "yaml") if "kind: TFJob" in block.text]
    (folder / "tfjobs").mkdir()
    (folder / "tfjobs" / "nightly_training.yaml").write_text(manifest.text)
    for index, block in enumerate(DAG_BLOCKS):
        (folder / f"docs_example_{index}.py").write_text(f"# {block.where}\n{block.text}")
    bag = parse_dag_folder(folder, bundle_name="docs")
    assert bag.import_errors == {}
    by_file = {Path(dag.fileloc).name: dag for dag in bag.dags.values()}
    assert len(by_file) == len(bag.dags), "a documented DAG file defines more than one DAG"
    return {block.where: by_file.get(f"docs_example_{index}.py") for index, block in enumerate(DAG_BLOCKS)}


def test_readme_shows_the_operator_the_sensor_and_the_decorator() -> None:
    readme = [block.text for block in DAG_BLOCKS if block.page == README]
    assert any("TFJobOperator(" in text for text in readme)
    assert any("TFJobSensor(" in text for text in readme)
    assert any("@task.tfjob(" in text for text in readme)


@pytest.mark.parametrize("block", DAG_BLOCKS, ids=_ids(DAG_BLOCKS))
def test_dag_example_imports_cleanly(block: Block, documented_dags: dict[str, Any]) -> None:
    dag = documented_dags[block.where]
    assert dag is not None, f"{block.where} defines no DAG"
    allowed = {"TFJobOperator", "TFJobSensor", "_TFJobDecoratedOperator", "_PythonDecoratedOperator"}
    assert {type(task).__name__ for task in dag.tasks} <= allowed
    for task in dag.tasks:
        if type(task).__name__ != "TFJobOperator":
            continue
        if task.image is not None:
            _build_like_the_operator(task)  # typed parameters: they must build a valid TFJob
        elif isinstance(task.tfjob, str):  # a template file, which Airflow has read at parse time
            from tfjob_provider.manifest import load_tfjob, validate_tfjob

            assert validate_tfjob(load_tfjob(task.tfjob))["kind"] == "TFJob"


def _build_like_the_operator(task: Any) -> None:
    from tfjob_provider.manifest import build_tfjob, validate_tfjob
    from tfjob_provider.operators.tfjob import BUILDER_FIELDS

    typed = {field: getattr(task, field) for field in BUILDER_FIELDS}
    typed["resources"] = typed.pop("container_resources")
    manifest = build_tfjob(name="docs-example", namespace="training", **typed)
    assert validate_tfjob(manifest)["spec"]["tfReplicaSpecs"]


def test_readme_taskflow_example_parses_into_a_tfjob_task(documented_dags: dict[str, Any]) -> None:
    (block,) = [b for b in DAG_BLOCKS if b.page == README and "@task.tfjob" in b.text]
    dag = documented_dags[block.where]
    train = dag.get_task("train")
    assert type(train).__name__ == "_TFJobDecoratedOperator"
    assert (train.chief, train.worker, train.ps, train.restart_policy, train.retries) == (
        1,
        2,
        1,
        "ExitCode",
        2,
    )
    assert dag.get_task("show").upstream_task_ids == {"train"}


# --- Python: everything else --------------------------------------------------------------------


def _free_names(source: str) -> set[str]:
    """Names the code uses but neither defines nor imports nor finds among the builtins."""
    top = symtable.symtable(source, "<docs>", "exec")
    defined = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    used: set[str] = set()
    tables = [top]
    while tables:
        table = tables.pop()
        for symbol in table.get_symbols():
            if symbol.is_referenced() and (table is top or symbol.is_global()):
                used.add(symbol.get_name())
        tables.extend(table.get_children())
    return used - defined - set(dir(builtins))


def _check_imports(block: Block) -> None:
    for node in ast.walk(ast.parse(block.text)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                importlib.import_module(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            module = importlib.import_module(node.module)
            for alias in node.names:
                if not hasattr(module, alias.name):
                    importlib.import_module(f"{node.module}.{alias.name}")


RUNNABLE = [block for block in OTHER_PYTHON_BLOCKS if not _free_names(block.text)]
FRAGMENTS = [block for block in OTHER_PYTHON_BLOCKS if block not in RUNNABLE]


def test_most_python_blocks_run() -> None:
    # A fragment (it uses names it does not define) is only import-checked: keep them the exception.
    assert len(RUNNABLE) >= 3
    assert len(FRAGMENTS) <= len(RUNNABLE), _ids(FRAGMENTS)


@pytest.mark.parametrize("block", RUNNABLE, ids=_ids(RUNNABLE))
def test_python_block_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(block.text, block.where, "exec"), {"__name__": "docs_example"})


@pytest.mark.parametrize("block", FRAGMENTS, ids=_ids(FRAGMENTS))
def test_python_fragment_imports_resolve(block: Block) -> None:
    compile(block.text, block.where, "exec")
    _check_imports(block)


# --- YAML, JSON ---------------------------------------------------------------------------------

YAML_BLOCKS = [block for page in PAGES for block in blocks(page, "yaml")]
JSON_BLOCKS = [block for page in PAGES for block in blocks(page, "json")]


@pytest.mark.parametrize("block", YAML_BLOCKS, ids=_ids(YAML_BLOCKS))
def test_yaml_block_parses(block: Block) -> None:
    from tfjob_provider.manifest import validate_tfjob

    documents = [document for document in yaml.safe_load_all(block.text) if document is not None]
    assert documents
    for document in documents:
        if isinstance(document, dict) and document.get("kind") == "TFJob":
            validate_tfjob(document)


@pytest.mark.parametrize("block", JSON_BLOCKS, ids=_ids(JSON_BLOCKS))
def test_json_block_parses(block: Block) -> None:
    json.loads(block.text)


# --- links, paths, names, make targets ----------------------------------------------------------


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_links_resolve(page: Path) -> None:
    broken = []
    for target in links(page):
        if re.match(r"^[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = (ROOT / page).parent / path if path else ROOT / page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved.relative_to(ROOT)):
            broken.append(f"{target}: no heading with anchor #{anchor}")
    assert broken == []


_TOP_DIRS = {path.name for path in ROOT.iterdir() if path.is_dir() and not path.name.startswith(".")}
_PLACEHOLDER = re.compile(r"[<>*{}$…\[\]]|\.\.\.")


def _words(page: Path) -> list[str]:
    words = [word for code in inline_code(page) for word in code.split()]
    for block in blocks(page, "console"):
        words += block.text.split()
    return [word.strip("\"',;:()") for word in words]


def _repository_path(word: str) -> Path | None:
    """The file or folder a word names when it starts at a top-level folder of the repository."""
    word = re.sub(r"(::\S*|:\d+)$", "", word)
    first, slash, _ = word.partition("/")
    if not slash or _PLACEHOLDER.search(word):
        return None
    if "." not in word.rstrip("/").rsplit("/", 1)[-1] and not word.endswith("/") and word.count("/") < 2:
        return None  # a label or annotation key such as tfjob-sandbox/script, not a path
    if first == "tfjob_sandbox":
        return ROOT / "tfjob-sandbox" / word
    return ROOT / word if first in _TOP_DIRS and first not in {"dist"} else None


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_repository_paths_exist(page: Path) -> None:
    paths = {word: _repository_path(word) for word in _words(page)}
    assert sorted(word for word, path in paths.items() if path is not None and not path.exists()) == []


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            if not hasattr(target, name):
                return False
            target = getattr(target, name)
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_dotted_names_resolve(page: Path) -> None:
    dotted = re.compile(r"(tfjob_provider|tfjob_sandbox)(\.\w+)+")
    names = {match.group(0) for word in _words(page) if (match := dotted.match(word))}
    assert sorted(name for name in names if not _resolves(name)) == []


def _make_targets() -> set[str]:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][\w-]*):", makefile, flags=re.MULTILINE))


@pytest.mark.parametrize("page", PAGES, ids=str)
def test_make_targets_exist(page: Path) -> None:
    texts = inline_code(page) + [block.text for block in blocks(page, "console")]
    targets = {target for text in texts for target in re.findall(r"\bmake ([a-z][\w-]*)", text)}
    assert targets - _make_targets() == set()


_CODE_FOLDERS = (
    "tfjob_provider",
    "tfjob-sandbox/tfjob_sandbox",
    "example_dags",
    "demo",
    "benchmarks",
    "tests",
)


def test_pages_cited_in_code_exist() -> None:
    # Docstrings, comments and messages point readers at pages: a moved page must take them along.
    cited = {
        f"{source.relative_to(ROOT)}: {page}"
        for folder in _CODE_FOLDERS
        for source in (ROOT / folder).rglob("*.py")
        for page in re.findall(r"\bdocs/[\w/.-]+?\.md\b", source.read_text(encoding="utf-8"))
        if not (ROOT / page).exists()
    }
    assert sorted(cited) == []


# --- the restart-policy x exit-code table, recomputed --------------------------------------------


def _exit_codes(header: str) -> list[int | None]:
    if header.startswith("no container status"):
        return [None]
    return [int(code) for code in re.findall(r"\d+", header.split("(")[0])]


def _expected(cell: str) -> tuple[VerdictState, bool | None]:
    if cell == "Restarting":
        return VerdictState.RESTARTING, None
    state, _, rest = cell.partition(", ")
    assert state == "Failed", cell
    return VerdictState.FAILED, rest.split(" ")[0] == "retryable"


def test_restart_table_matches_the_verdict_engine() -> None:
    text = section(RULES, "3. Restart policy and exit code")
    header, rows = table_header(text), table_rows(text)
    assert [row[0].split()[0] for row in rows] == ["`Never`", "`OnFailure`", "`Always`", "`ExitCode`"]
    checked = 0
    for row in rows:
        policy = row[0].split()[0].strip("`")
        for column, cell in zip(header[1:], row[1:], strict=True):
            expected_state, expected_retryable = _expected(cell)
            for code in _exit_codes(column):
                tfjob = make_tfjob({"Chief": 1, "Worker": 2}, restart_policy=policy)
                pods = [
                    make_pod("Chief", 0, phase="Running"),
                    make_pod("Worker", 0, phase="Running", restart_policy=policy),
                    make_pod("Worker", 1, phase="Failed", exit_code=code, restart_policy=policy),
                ]
                verdict = decide(tfjob, pods)
                assert verdict.state == expected_state, (policy, code, verdict)
                if expected_retryable is not None:
                    assert verdict.retryable == expected_retryable, (policy, code, verdict)
                checked += 1
    assert checked == 4 * 10


# --- parameters and configuration options --------------------------------------------------------


def _documented_names(heading: str) -> set[str]:
    names: set[str] = set()
    for row in table_rows(section(OPERATOR_REFERENCE, heading)):
        names.update(re.findall(r"`([a-z_]+)`", row[0]))
    return names


def _parameters(import_path: str) -> set[str]:
    module_name, class_name = import_path.split(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    return {
        name
        for name, parameter in inspect.signature(cls.__init__).parameters.items()
        if name != "self" and parameter.kind is not inspect.Parameter.VAR_KEYWORD
    }


@pytest.mark.parametrize(
    ("heading", "import_path"),
    [
        ("TFJobOperator parameters", "tfjob_provider.operators.tfjob:TFJobOperator"),
        ("TFJobSensor parameters", "tfjob_provider.sensors.tfjob:TFJobSensor"),
        ("TFJobTrigger parameters", "tfjob_provider.triggers.tfjob:TFJobTrigger"),
    ],
)
def test_every_parameter_is_documented(heading: str, import_path: str) -> None:
    assert _parameters(import_path) - _documented_names(heading) == set()


def test_documented_operator_parameters_exist() -> None:
    parameters = _parameters("tfjob_provider.operators.tfjob:TFJobOperator")
    assert _documented_names("TFJobOperator parameters") - parameters == set()


def test_configuration_options_are_the_providers() -> None:
    from tfjob_provider import get_provider_info

    options = get_provider_info()["config"]["tfjob_provider"]["options"]
    rows = table_rows(section(CONFIGURATION, "`[tfjob_provider]` options"))
    documented = {row[0].strip("`"): row[1].strip("`").strip('"') for row in rows}
    assert documented == {name: option["default"] for name, option in options.items()}


# --- messages ------------------------------------------------------------------------------------


def test_troubleshooting_quotes_the_real_messages() -> None:
    from tfjob_provider.kube.errors import TFJOB_NOT_SERVED_MESSAGE
    from tfjob_provider.policy import NOT_RECONCILED_MESSAGE

    text = (ROOT / TROUBLESHOOTING).read_text(encoding="utf-8")
    assert f"`{TFJOB_NOT_SERVED_MESSAGE}`" in text
    assert f"StartupTimeout: {NOT_RECONCILED_MESSAGE}" in text
