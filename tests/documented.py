"""The shell commands the documents show a reader: README.md, docs/*.md, the Snakefile's header and the comments of
the config files (config.yaml, .test/config.yaml, profiles/*/config.yaml, overlays/*.yaml).

What counts as a command:

* every line of a fenced ``bash`` (``sh``, ``shell``, ``console``) block, its trailing ``  # comment`` and a ``$ ``
  prompt taken off;
* an inline code span (in Markdown, or in a ``#`` comment) whose first word is a program a reader runs from a
  checkout: ``snakemake``, ``rollout-equality``, ``python``, ``python3``, ``pip``, ``pytest``, ``pre-commit`` (each
  also as ``.venv/bin/<name>``);
* an inline code span that is a Snakemake config override: it starts with ``--config`` or ``--configfile``;
* in a ``#`` comment, a line indented by at least three spaces after the ``#`` whose first word is such a program.

Whitespace inside a span is normalised (a span may wrap across lines).
"""

import re
from pathlib import Path

from conftest import REPO

PROGRAMS = ("snakemake", "rollout-equality", "python", "python3", "pip", "pytest", "pre-commit")
COMMAND = re.compile(r"^(?:\.venv/bin/)?(?:" + "|".join(map(re.escape, PROGRAMS)) + r")(?=\s|$)")
OVERRIDE = re.compile(r"^--config(?:file)?[\s=]")
SHELL_BLOCK = re.compile(r"^```(?:bash|sh|shell|console)\s*\n(.*?)^```", re.S | re.M)
ANY_BLOCK = re.compile(r"^```.*?^```", re.S | re.M)
SPAN = re.compile(r"(?<!`)`([^`]+)`(?!`)")


def sources() -> list[Path]:
    """The documents read, in a fixed order."""
    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    docs = [d for d in docs if not d.name.endswith(".in.md")]  # templates: their generated documents are read
    configs = [REPO / "config.yaml", REPO / ".test/config.yaml", *sorted((REPO / "profiles").glob("*/config.yaml"))]
    configs += sorted((REPO / "overlays").glob("*.yaml"))
    return docs + configs + [REPO / "Snakefile"]


def _strip_comment(line: str) -> str:
    """A shell line without its trailing comment (`` # ...`` after two spaces or at the start)."""
    return re.split(r"(?:^|\s{2,})#", line, maxsplit=1)[0].strip()


def _is_command(text: str) -> bool:
    return bool(COMMAND.match(text) or OVERRIDE.match(text))


def commands_of_markdown(text: str) -> list[str]:
    found = []
    for block in SHELL_BLOCK.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            line = _strip_comment(line.removeprefix("$ "))
            if line:
                found.append(" ".join(line.split()))
    prose = ANY_BLOCK.sub("", text)
    found += [" ".join(s.split()) for s in SPAN.findall(prose) if _is_command(" ".join(s.split()))]
    return found


def _comment(line: str) -> str | None:
    """The comment of a line: all of it after a leading ``#``, or what follows `` # `` after a value."""
    if line.lstrip().startswith("#"):
        return line.split("#", 1)[1]
    trailing = re.search(r"\s#(\s.*)$", line)
    return trailing.group(1) if trailing else None


def commands_of_comments(text: str) -> list[str]:
    """Commands in the ``#`` comments of a YAML file or a Snakefile."""
    comments = [_comment(line) for line in text.splitlines() if _comment(line) is not None]
    found = []
    for comment in comments:
        indented = re.match(r"^ {3,}(\S.*)$", comment)
        if indented and COMMAND.match(indented.group(1)):
            found.append(" ".join(_strip_comment(indented.group(1)).split()))
    joined = "\n".join(comments)
    found += [" ".join(s.split()) for s in SPAN.findall(joined) if _is_command(" ".join(s.split()))]
    return found


STRAY = re.compile(r"(?<![\w./`-])(?:\.venv/bin/)?(?:snakemake|rollout-equality)\s+-")


def stray_commands() -> dict[str, list[str]]:
    """{comment line: its document} for every ``#`` comment that shows a command outside the forms above (a
    ``snakemake --...`` in running prose): write it as a code span or an indented line, so that it is read."""
    found: dict[str, list[str]] = {}
    for doc in sources():
        if doc.suffix == ".md":
            continue
        for line in doc.read_text().splitlines():
            comment = _comment(line)
            if comment is None:
                continue
            if re.match(r"^ {3,}\S", comment):
                continue
            if STRAY.search(SPAN.sub("", comment)):
                found.setdefault(str(doc.relative_to(REPO)), []).append(line.strip())
    return found


def documented_commands() -> dict[str, list[str]]:
    """{command: the documents that show it (paths relative to the repository)}, in the order first shown."""
    found: dict[str, list[str]] = {}
    for doc in sources():
        text = doc.read_text()
        commands = commands_of_markdown(text) if doc.suffix == ".md" else commands_of_comments(text)
        for command in commands:
            where = found.setdefault(command, [])
            if str(doc.relative_to(REPO)) not in where:
                where.append(str(doc.relative_to(REPO)))
    return found


def quick_start_tiny_command() -> str:
    """README's Quick start command that runs the tiny configuration (in its folder `tiny/`)."""
    quick = (REPO / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    (command,) = [b.strip() for b in re.findall(r"```bash\n(.*?)```", quick, flags=re.S) if "--directory tiny" in b]
    return command


def ci_runs(command: str) -> bool:
    """.ci/run runs the command as written, on a line of its own that ends in ``|| exit $?``: set -e spares a command
    failing inside an ``&&`` chain, so without it a failed install would let CI go on to its next step."""
    return command + " || exit $?" in (REPO / ".ci/run").read_text().splitlines()


# --- what a Snakemake command needs to run as written -------------------------------------------------------------

# The value forms of Snakemake's flags that take a list of values (argparse ``nargs="*"``/``"+"``): a word after such
# a flag that has not its form is a target the flag took as one more value.
VALUE_FORMS = {
    "--set-resources": re.compile(r"^\w+:\w+=\S+$"),
    "--set-threads": re.compile(r"^\w+=\S+$"),
    "--set-scatter": re.compile(r"^\w+=\S+$"),
    "--set-resource-scopes": re.compile(r"^\w+=\S+$"),
    "--resources": re.compile(r"^\w+=\S+$"),
    "--default-resources": re.compile(r"^\w+=\S+$"),
    "--config": re.compile(r"^[\w.]+=\S*$"),
    "--configfile": re.compile(r"^\S+\.(?:ya?ml|json)$"),
    "--software-deployment-method": re.compile(r"^(?:conda|apptainer|env-modules)$"),
}
RULE_LISTS = ("--forcerun", "--until", "--omit-from", "--allowed-rules", "--prioritize")  # values: rule names


def _snakemake_parser():
    from snakemake.cli import get_argument_parser

    return get_argument_parser()


def snakemake_problems(command: str, rule_names: set[str]) -> list[str]:
    """Why a shell command's Snakemake segments would not run as written (empty: they would): no ``--cores`` and no
    ``--profile`` ("cores have to be specified for local execution"; ``-n`` sets them itself, so only a real run
    finds it), or a target written after a flag that takes a list of values, which takes it as one of them.
    ``rule_names``: the workflow's rules (the values of ``--forcerun`` and its kind)."""
    parser = _snakemake_parser()
    problems = []
    for segment in command.split(" && "):
        words = segment.split()
        if not words or not re.fullmatch(r"(?:\.venv/bin/)?snakemake", words[0]):
            continue
        flags = {w.split("=", 1)[0] for w in words[1:] if w.startswith("-")}
        if not flags & {"--cores", "-c", "--profile"}:
            problems.append(f"{segment}: no --cores N (nor a --profile that sets them)")
        i = 1
        while i < len(words):
            word = words[i]
            i += 1
            if not word.startswith("-") or "=" in word:
                continue
            action = parser._option_string_actions.get(word)
            if action is None:
                problems.append(f"{segment}: Snakemake has no flag {word}")
                continue
            name = next((o for o in action.option_strings if o in VALUE_FORMS or o in RULE_LISTS), word)
            if action.nargs in (0,):
                continue
            values = []
            while i < len(words) and not words[i].startswith("-"):
                values.append(words[i])
                i += 1
                if action.nargs in (None, "?"):
                    break
            if action.nargs not in ("*", "+"):
                continue
            for value in values:
                if name in RULE_LISTS:
                    taken = value not in rule_names
                else:
                    form = VALUE_FORMS.get(name)
                    taken = form is not None and not form.match(value)
                if taken:
                    problems.append(
                        f"{segment}: {word} takes {value!r} as one of its values (a target written after a flag "
                        "that takes a list of values): put the target first, right after snakemake and --cores"
                    )
    return problems


def snakemake_commands(target: str) -> list[str]:
    """The documented Snakemake commands whose one target is ``target`` (e.g. ``check_sources``)."""
    return [c for c in documented_commands() if re.fullmatch(r"(?:\.venv/bin/)?snakemake --cores \d+ " + target, c)]
