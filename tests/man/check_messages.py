"""docs/user-guide.md explains every warning the agent can log and every
message the plugin prints while a job runs: each message's longest fixed
part (parsed from the calls in the sources) must appear in the guide."""
import glob
import os
import re
import sys

SRC = os.environ.get("top_srcdir", os.path.join(os.path.dirname(__file__), "..", ".."))


def calls(path, functions):
    """The format strings of the calls of FUNCTIONS in PATH (adjacent
    literals joined, anything between them, such as PRIu64, dropped)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for match in re.finditer(r"\b(?:" + "|".join(functions) + r")\s*\(", text):
        depth, i = 1, match.end()
        while depth and i < len(text):
            if text[i] == '"':
                i += 1
                while text[i] != '"':
                    i += 2 if text[i] == "\\" else 1
            elif text[i] == "(":
                depth += 1
            elif text[i] == ")":
                depth -= 1
            i += 1
        # the format: the first string literal and those glued to it
        # (through macros such as PRIu64), up to the first comma
        call = text[match.end():i - 1]
        first = call.find('"')
        glued = re.match(r'(?:\s*(?:"(?:[^"\\]|\\.)*"|[A-Z][A-Z0-9_]*))+', call[first:])
        literals = re.findall(r'"((?:[^"\\]|\\.)*)"', glued.group(0) if glued else "")
        line = text.count("\n", 0, match.start()) + 1
        yield f"{os.path.relpath(path, SRC)}:{line}", "".join(literals)


def longest_fixed_part(message):
    parts = re.split(r"%[-+#0-9.*]*(?:hh|h|ll|l|z|j|t)?[a-zA-Z]?", message.replace("%%", "\0"))
    return max((p.replace("\0", "%").strip(" :;,()'") for p in parts), key=len)


with open(os.path.join(SRC, "docs/user-guide.md"), encoding="utf-8") as f:
    guide = " ".join(f.read().split())

sources = [(p, ["nopfs_warning"]) for p in
           sorted(glob.glob(os.path.join(SRC, "agent", "**", "*.c"), recursive=True))]
sources.append((os.path.join(SRC, "lib/catalog/catalog_cache.c"), ["nopfs_warning"]))
for name in ("companion.c", "launch.c", "report_wait.c", "tasks.c", "epilog.c"):
    sources.append((os.path.join(SRC, "spank", name), ["user_error", "user_info", "slurm_info"]))

checked = missing = 0
for path, functions in sources:
    for where, message in calls(path, functions):
        fixed = longest_fixed_part(message)
        if len(fixed) < 8:
            continue  # only a format, such as "%s": the line is someone else's message
        checked += 1
        if fixed not in guide:
            missing += 1
            print(f"not ok - {where}: '{message}' is not in docs/user-guide.md "
                  f"(looked for '{fixed}')")
if checked < 60:
    print(f"not ok - only {checked} messages found: the sources' calls were not parsed")
    sys.exit(1)
print(f"{'not ok' if missing else 'ok'} - {checked - missing} of {checked} messages explained")
sys.exit(1 if missing else 0)
