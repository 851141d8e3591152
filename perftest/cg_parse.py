# SPDX-License-Identifier: BSD-2-Clause
"""Reading callgrind's output for perftest/compare: instructions per
function and object of a dump, and the part of the path it counts."""
import os


def self_costs(path):
    """Instructions (Ir) per (object, file, function) of a callgrind
    output file, self cost only: the inclusive cost line after each
    calls= is skipped. Code inlined from another file stays with the
    function and object it was compiled into; its file is the one of
    its lines (fl=, fi=, fe=)."""
    names = {"ob": {}, "fl": {}, "fn": {}}

    def name(kind, text):
        text = text.strip()
        if not text.startswith("("):
            return text
        key, _, rest = text[1:].partition(")")
        if rest.strip():
            names[kind][key] = rest.strip()
        return names[kind].get(key, "?")

    ob = fl = fn = None
    skip = False
    costs = {}
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("ob="):
                ob = name("ob", line[3:])
            elif line.startswith("fl="):
                fl = name("fl", line[3:])
            elif line.startswith(("fi=", "fe=")):
                fl = name("fl", line[3:])
            elif line.startswith("fn="):
                fn = name("fn", line[3:])
            elif line.startswith("cob="):
                name("ob", line[4:])
            elif line.startswith(("cfl=", "cfi=")):
                name("fl", line[4:])
            elif line.startswith("cfn="):
                name("fn", line[4:])
            elif line.startswith("calls="):
                skip = True
            elif line[:1].isdigit() or line[:1] in "+-*":
                if skip:
                    skip = False
                    continue
                fields = line.split()
                if len(fields) >= 2:
                    k = (ob, fl, fn)
                    costs[k] = costs.get(k, 0) + int(fields[1])
    return costs


def cg_object(ob):
    """The object a cost belongs to, as the tables name it."""
    b = os.path.basename(ob or "")
    if b.startswith("librcx"):
        return "librcx"
    if b.startswith("libibverbs"):
        return "libibverbs"
    if b.startswith("librxe") or "rxe-rdmav" in b:
        return "librxe"
    return "other"


def cg_dump(path):
    """One dump of a --count phase: its part and the costs in it."""
    part = None
    with open(path, errors="replace") as f:
        for line in f:
            if line.startswith("desc: Trigger: Client Request:"):
                part = line.rsplit(":", 1)[1].strip()
                break
            if line.startswith(("fn=", "ob=")):
                break
    return part, self_costs(path)
