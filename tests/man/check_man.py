"""The manual pages (man/) render without a warning (mandoc -Tlint and
groff -ww), and each documents exactly what its program accepts: every
option of its option table (parsed from the sources) is in the page, and
every option in the page's OPTIONS section is in the table. The same for
the plugin's plugstack keys and environment, the C API's functions and
the tasks' environment."""
import os
import re
import subprocess
import sys

SRC = os.environ.get("top_srcdir", os.path.join(os.path.dirname(__file__), "..", ".."))
failures = []


def fail(message):
    failures.append(message)
    print("not ok - " + message)


def read(path):
    with open(os.path.join(SRC, path), encoding="utf-8") as f:
        return f.read()


def run(argv):
    # not with the sanitizer build's runtime preloaded (make distcheck): it is
    # for nopfs's libraries, and reports the renderers' own slips
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    try:
        done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    except FileNotFoundError:
        fail(f"{argv[0]} is not installed (Debian package mandoc / groff-base)")
        return None
    return done


def render(page):
    """The page as plain text, one long line per paragraph."""
    done = run(["mandoc", "-Tascii", "-Owidth=1000", os.path.join(SRC, page)])
    if done is None or done.returncode != 0:
        fail(f"{page}: mandoc -Tascii failed: {done.stderr if done else ''}")
        return ""
    return re.sub(r".\x08", "", done.stdout)


def section(text, title):
    """The body of section TITLE of a rendered page."""
    match = re.search(r"^" + re.escape(title) + r"\n(.*?)(?=^[A-Z][A-Z ]+\n|\Z)", text,
                      re.M | re.S)
    if not match:
        fail(f"no section {title}")
        return ""
    return match.group(1)


def options_in(text, prefix=""):
    return set(re.findall(r"(?<![\w-])--(" + prefix + r"[a-z0-9][a-z0-9-]*[a-z0-9])", text))


def table(source, pattern, known):
    """The names PATTERN finds in SOURCE; KNOWN must be among them (the
    pattern still matches the source)."""
    names = set(re.findall(pattern, read(source)))
    if known not in names:
        fail(f"{source}: the option table was not found (no '{known}')")
    return names


def check_same(page, what, accepted, documented, documented_where, both=True):
    """ACCEPTED must all be DOCUMENTED; with BOTH, nothing else may be."""
    bad = len(failures)
    for name in sorted(accepted - documented):
        fail(f"{page}: {what} '{name}' is accepted but not in {documented_where}")
    if both:
        for name in sorted(documented - accepted):
            fail(f"{page}: {what} '{name}' is in {documented_where} but not accepted")
    if len(failures) == bad:
        print(f"ok - {page}: the {len(accepted)} {what}s are in {documented_where}")


# 1. Rendering: no warning from either formatter.
pages = sorted("man/" + name for name in os.listdir(os.path.join(SRC, "man"))
               if re.fullmatch(r"[\w.-]+\.[1-8]", name))
expected = {"man/nopfs-agent.8", "man/spank_nopfs.8", "man/nopfs-plan.1",
            "man/nopfs-report.1", "man/nopfs-sim.1", "man/nopfs-stage.1", "man/nopfs.3"}
if not expected <= set(pages):
    fail(f"missing manual pages: {sorted(expected - set(pages))}")
for page in pages:
    path = os.path.join(SRC, page)
    for argv in (["mandoc", "-Tlint", "-Wwarning", path], ["groff", "-ww", "-z", "-mandoc", path]):
        done = run(argv)
        if done is None:
            continue
        if done.returncode != 0 or done.stdout.strip() or done.stderr.strip():
            fail(f"{page}: {' '.join(argv[:-1])} warns:\n{done.stdout}{done.stderr}")
        else:
            print(f"ok - {page}: {argv[0]} renders it without a warning")

# 2. Programs built on lib/common/optable.h: every row's name.
OPTABLE = r'NOPFS_OPT_(?:FLAG|STRING|PATH|UINT|SECONDS|CALL)\(\s*"([a-z0-9-]+)"'
for page, source, known in (("man/nopfs-agent.8", "agent/options.c", "dataset"),
                            ("man/nopfs-plan.1", "tools/plan/main.c", "tasks-per-node"),
                            ("man/nopfs-report.1", "tools/report/main.c", "merge"),
                            ("man/nopfs-stage.1", "tools/stage/main.c", "timeout")):
    accepted = table(source, OPTABLE, known)
    if "NOPFS_OPT_HELP" in read(source):
        accepted.add("help")
    text = render(page)
    check_same(page, "option", accepted, options_in(text), "the page", both=False)
    check_same(page, "option", accepted, options_in(section(text, "OPTIONS")), "OPTIONS")

# nopfs-sim: getopt_long's table, and its commands.
accepted = table("benchmarks/sim/sim_main.c",
                 r'\{\s*"([a-z0-9-]+)",\s*(?:no|required|optional)_argument', "scale")
text = render("man/nopfs-sim.1")
check_same("man/nopfs-sim.1", "option", accepted, options_in(section(text, "OPTIONS")),
           "OPTIONS")
commands = table("benchmarks/sim/sim_main.c", r'strcmp\(command, "([a-z]+)"\)', "whatif")
check_same("man/nopfs-sim.1", "command", commands,
           set(re.findall(r"^ {5}([a-z]+)(?: FILE)?(?:  |$)", section(text, "DESCRIPTION"), re.M)),
           "DESCRIPTION's list")

# 3. The plugin: its options, their environment variables, the plugstack keys.
text = render("man/spank_nopfs.8")
accepted = table("spank/user_options.c", r'\{\s*"(nopfs-[a-z-]+)",', "nopfs-dataset")
check_same("man/spank_nopfs.8", "option", accepted,
           options_in(section(text, "OPTIONS"), "nopfs-"), "OPTIONS")
variables = table("spank/user_options.c", r'"(SLURM_NOPFS_[A-Z_]+)"', "SLURM_NOPFS_DATASET")
check_same("man/spank_nopfs.8", "variable", variables,
           set(re.findall(r"SLURM_NOPFS_[A-Z][A-Z_]*[A-Z]", section(text, "OPTIONS"))),
           "OPTIONS")
keys = table("spank/config.c", r'\{\s*"([a-z_]+)",\s*"[^"]*",\s*parse_', "ssd_base")
check_same("man/spank_nopfs.8", "plugstack key", keys,
           set(re.findall(r"^ {5}([a-z_]+)=", section(text, "PLUGSTACK KEYS"), re.M)),
           "PLUGSTACK KEYS")

# 4. The C API and the tasks' environment.
text = render("man/nopfs.3")
functions = table("lib/task/nopfs.h", r"\b(nopfs_client_\w+)\(", "nopfs_client_get")
exported = re.search(r"-export-symbols-regex '\^\(([^)]*)\)", read("lib/task/local.mk"))
if not exported or "nopfs_status_string" not in exported.group(1):
    fail("lib/task/local.mk: libnopfs's exported symbols were not found")
functions.add("nopfs_status_string")
check_same("man/nopfs.3", "function", functions,
           set(re.findall(r"\b(nopfs_(?:client_\w+|status_string))\(", section(text, "SYNOPSIS"))),
           "SYNOPSIS")
variables = table("lib/task/runtime.h", r'#define NOPFS_ENV_\w+\s+"(NOPFS_\w+)"', "NOPFS_SOCKET")
check_same("man/nopfs.3", "variable", variables,
           set(re.findall(r"^ {5}(NOPFS_\w+)$", section(text, "ENVIRONMENT"), re.M)),
           "ENVIRONMENT")
token = table("lib/common/token.h", r'#define NOPFS_ENV_AGENT_TOKEN\s+"(\w+)"', "NOPFS_AGENT_TOKEN")
for name in token:
    if name not in section(render("man/nopfs-agent.8"), "ENVIRONMENT"):
        fail(f"man/nopfs-agent.8: variable '{name}' is not documented")

if failures:
    print(f"{len(failures)} problem(s)")
    sys.exit(1)
print("all manual pages render cleanly and match the code")
