"""The project's man pages (man/*.[58]) as text, for the tests that hold
them to the code: tests/check-reference (names: options, keys, metrics,
journal fields, exit codes, permissions) and
tests/integration/043-agent-real-apiserver.sh (the Roles of node-agent(8)
applied verbatim to the real kube-apiserver).

Only the roff the pages use: .SH/.SS sections, .TP/.IP/.PP paragraphs,
.B/.I and the alternating-font macros, .nf/.fi blocks, and the escapes
\\- \\(dq \\(lq \\(rq \\(en \\e \\& \\fX. Every text line keeps the number of
the source line it came from, so a finding can name PAGE:LINE."""
import re

_ESCAPES = [("\\(dq", '"'), ("\\(lq", '"'), ("\\(rq", '"'), ("\\(en", "-"), ("\\(em", "-"),
            ("\\-", "-"), ("\\&", ""), ("\\%", ""), ("\\e", "\\"), ("\\ ", " ")]
_FONT = re.compile(r"\\f[BIRP]|\\f\(..")
_ALTERNATING = {".BR", ".RB", ".BI", ".IB", ".IR", ".RI"}


def unescape(s):
    s = _FONT.sub("", s)
    for a, b in _ESCAPES:
        s = s.replace(a, b)
    return s


def _args(rest):
    """The arguments of a macro line: words, or "quoted strings"."""
    out, i = [], 0
    while i < len(rest):
        if rest[i] in " \t":
            i += 1
        elif rest[i] == '"':
            j = rest.find('"', i + 1)
            while j != -1 and j + 1 < len(rest) and rest[j + 1] == '"':  # "" inside a quoted argument
                j = rest.find('"', j + 2)
            j = len(rest) if j == -1 else j
            out.append(rest[i + 1:j].replace('""', '"'))
            i = j + 1
        else:
            j = i
            while j < len(rest) and rest[j] not in " \t":
                j += 1
            out.append(rest[i:j])
            i = j
    return out


class Block:
    """One paragraph: its kind (TP, IP, PP, NF for a .nf/.fi block), the
    tag of a .TP, the text lines as (source line number, text)."""

    def __init__(self, kind, line):
        self.kind, self.line, self.tag, self.tag_line, self.lines = kind, line, None, None, []

    def text(self):
        return " ".join(t for _, t in self.lines)


class Section:
    def __init__(self, name, line, sub=None):
        self.name, self.line, self.sub, self.blocks = name, line, sub, []

    def text(self):
        return " ".join(b.text() for b in self.blocks)

    def numbered(self):
        return [x for b in self.blocks for x in ([(b.tag_line, b.tag)] if b.tag else []) + b.lines]


class Page:
    def __init__(self, path):
        self.path = path
        self.sections = []
        with open(path, encoding="utf-8") as f:
            self.raw = f.read().split("\n")
        self._parse()

    def _parse(self):
        sec, blk, nofill, want_tag = None, None, False, False
        for no, src in enumerate(self.raw, 1):
            if src.startswith('.\\"'):
                continue
            m = re.match(r"^\.(SH|SS)\s+(.*)$", src)
            if m:
                name = unescape(" ".join(_args(m.group(2))))
                if m.group(1) == "SH":
                    top = name
                    sec = Section(name, no)
                else:
                    sec = Section(name, no, sub=top)
                self.sections.append(sec)
                blk = Block("PP", no)
                sec.blocks.append(blk)
                continue
            if sec is None:
                continue
            if src in (".nf", ".fi"):
                nofill = src == ".nf"
                blk = Block("NF" if nofill else "PP", no)
                sec.blocks.append(blk)
                continue
            if re.match(r"^\.(TP|IP|PP|P|LP)\b", src) and not nofill:
                kind = src[1:3].strip()
                if kind == "IP" and blk is not None and blk.kind == "TP":
                    continue  # .IP continues the item of a .TP
                blk = Block("TP" if kind == "TP" else "PP", no)
                sec.blocks.append(blk)
                want_tag = kind == "TP"
                continue
            if src.startswith((".RS", ".RE", ".br", ".sp", ".TH", ".ad", ".na", ".ne")):
                continue
            m = re.match(r"^(\.[A-Z]{1,2})(?:\s+(.*))?$", src)
            if m and not nofill:
                macro, args = m.group(1), _args(m.group(2) or "")
                text = "".join(args) if macro in _ALTERNATING else " ".join(args)
            else:
                text = src
            text = unescape(text)
            if want_tag:
                blk.tag, blk.tag_line, want_tag = text, no, False
            else:
                blk.lines.append((no, text))

    def section(self, name, sub=None):
        """The .SH section name (sub: its .SS subsection), or None."""
        for s in self.sections:
            if sub is None and s.sub is None and s.name == name:
                return s
            if sub is not None and s.sub == name and s.name == sub:
                return s
        return None

    def subsections(self, name):
        return [s for s in self.sections if s.sub == name]

    def all_lines(self):
        return [x for s in self.sections for x in s.numbered()]


def roles(page):
    """The Roles and ClusterRoles printed in node-agent(8), section
    DESCRIPTION, subsection Permissions: the YAML of the .nf/.fi block(s)
    holding "kind: Role" or "kind: ClusterRole", as (first source line,
    YAML text); the text is the page's bytes with roff escapes undone."""
    sec = page.section("DESCRIPTION", "Permissions")
    if sec is None:
        return []
    out = []
    for b in sec.blocks:
        if b.kind != "NF" or not b.lines:
            continue
        text = "\n".join(t for _, t in b.lines)
        if re.search(r"^kind:\s*(Cluster)?Role\s*$", text, re.M):
            out.append((b.lines[0][0], text))
    return out


PLACEHOLDER = re.compile(r"<[^<>\n]+>")


def substitute(yaml_text, values):
    """Replaces the placeholders (<osc.secretName>, ...) by values[name]
    (a string, or a list for a placeholder that stands for several names
    in a YAML list). Returns (text, [placeholders without a value])."""
    missing = []

    def one(m):
        key = m.group(0)
        if key not in values:
            missing.append(key)
            return key
        v = values[key]
        return ", ".join(v) if isinstance(v, (list, tuple)) else v
    return PLACEHOLDER.sub(one, yaml_text), sorted(set(missing))
