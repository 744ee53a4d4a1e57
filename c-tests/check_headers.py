#!/usr/bin/env python3
"""check_headers.py -- keep ramp's hand-written C headers honest.

Usage (from the repository root; the test suite runs it this way):

    python3 c-tests/check_headers.py --lib target/release/libramp.so \
        --generated bindings/ramp_gen.h --cargo Cargo.toml
    python3 c-tests/check_headers.py --self-test

What it checks (Python 3 standard library only):

  a. parses every function prototype and every `extern` data object declared in
     include/am.h and include/ramp.h (comments stripped, multi-line prototypes joined,
     macros and typedefs skipped);
  b. runs `nm -D --defined-only` on the library (or reads a saved listing given with
     --nm-output) and fails for every declared function / object that is not exported
     (or is exported as the wrong kind of symbol);
  c. parses the cbindgen-generated header (the Rust `extern "C"` functions; it does not
     contain the C variadic shim functions) and, for every function in both, compares
     the return type and the parameter types after normalisation; it also compares
     `extern` objects, typedefs, struct layouts (field names, types, array sizes) and
     integer/string constants that appear in both.  It fails when a Rust function of the
     generated header is declared nowhere in include/*.h (names starting with
     `ramp_internal_` are exempt), and when a function of include/ is in neither the
     generated header nor the shim's export list (src/ffi/c/exports.txt);
  d. checks RAMP_VERSION_MAJOR/MINOR/PATCH and RAMP_VERSION_STRING of include/ramp.h
     against `version = "x.y.z"` in the [package] section of Cargo.toml, and
     RAMP_VERSION == major*10000 + minor*100 + patch;
  e. prints "check_headers: N passed, M failed" (every item checked counts as one
     check) and exits 1 when anything failed (2 on a usage error).

`--self-test` writes a small, deliberately mismatched header pair, export list, nm
listing and Cargo.toml to a temporary directory and asserts that the checker reports
each planted fault (a parameter type mismatch, a missing export, ...), and that a
consistent pair passes -- so the checker is shown able to fail.

Normalisation rules used when comparing types
---------------------------------------------
  * whitespace collapsed, parameter names dropped;
  * `const`/`volatile` placement normalised (`void const *` == `const void *`), and
    top-level qualifiers of parameters and return types ignored (they are not part of
    a C function type);
  * the `struct`/`union`/`enum` keywords are dropped (`struct ramp_en` == `ramp_en`:
    cbindgen's "both"/"type" styles name the tag and the typedef alike);
  * array parameters decay to pointers (`int32_t a[16]` == `int32_t *a`);
  * `f()` and `f(void)` both mean "no parameters" (Rust `extern "C" fn()` is emitted as
    `(void)`, the AM-2 handler type is the unprototyped `void (*)()`);
  * `long int` == `long`, `unsigned` == `unsigned int`, `signed int` == `int`, ...;
  * the explicit ALIASES table below, applied to both headers;
  * `volatile` on a pointee in include/ where the generated header has none (Rust
    cannot say it);
  * and one directional rule: where include/ says `int`, the generated header may say
    `int32_t` (a Rust `i32` instead of `c_int`; identical on every ramp platform).  The
    reverse (header `int32_t`, generated `int`) is reported.

Extra equivalences can be given with --alias NAME=TYPE (repeatable).
"""

import argparse
import ast
import os
import re
import subprocess
import sys
import tempfile

# ---------------------------------------------------------------------------------------
# Alias table: the only type names treated as equivalent to something else.  Each entry
# is a typedef of include/am.h or include/ramp.h (left) and what it stands for (right),
# except size_t, which cbindgen writes as uintptr_t for a Rust usize.
# ---------------------------------------------------------------------------------------
ALIASES = {
    "ep_t": "struct ramp_endpoint *",     # am.h: typedef struct ramp_endpoint *ep_t;
    "eb_t": "struct ramp_bundle *",       # am.h: typedef struct ramp_bundle *eb_t;
    "en_t": "struct ramp_en",             # am.h: typedef struct ramp_en {...} en_t;
    "ramp_stats_t": "struct ramp_stats",  # ramp.h: typedef struct ramp_stats {...} ramp_stats_t;
    "tag_t": "uint64_t",                  # am.h
    "handler_t": "uint8_t",               # am.h
    "op_t": "int",                        # am.h
    "am_handler_fn_t": "void (*)(void)",  # am.h: typedef void (*am_handler_fn_t)();
    "size_t": "uintptr_t",                # Rust usize: cbindgen emits uintptr_t
    "ramp_txn_t": "uint64_t",             # ramp.h: transactions
    "ramp_ack_t": "int",                  # ramp.h: C enums, ints in Rust (src/ffi/txn.rs)
    "ramp_progress_t": "int",
    "ramp_abandon_t": "int",
}

# The directional rule: generated `int32_t` accepted where include/ says `int`.
GEN_INT32_MATCHES_HEADER_INT = True

# Names in the generated header that need no declaration in include/.
INTERNAL_PREFIX = "ramp_internal_"

DEFAULT_HEADERS = ("am.h", "ramp.h")

QUALIFIERS = {"const", "volatile", "restrict", "__restrict", "__restrict__"}
TAG_KEYWORDS = {"struct", "union", "enum"}
BUILTIN_TYPE_WORDS = {
    "void", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
    "_Bool", "bool", "_Complex", "__int128",
}
STORAGE_WORDS = {"extern", "static", "inline", "__inline", "__inline__", "register",
                 "_Noreturn", "_Thread_local", "__thread"}

TOKEN_RE = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|\.\.\.|\S")
IDENT_RE = re.compile(r"^[A-Za-z_]\w*$")


class ParseError(Exception):
    pass


# ---------------------------------------------------------------------------------------
# Lexical helpers
# ---------------------------------------------------------------------------------------

def strip_comments(text):
    """Removes /* */ and // comments, keeping string and character literals intact."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            if j < 0:
                raise ParseError("unterminated /* comment")
            # keep line structure so that preprocessor lines stay separate
            out.append(" " + "\n" * text.count("\n", i, j + 2))
            i = j + 2
        elif c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def split_preprocessor(text):
    """Returns (directives, code): logical preprocessor lines, and the other text."""
    text = re.sub(r"\\\r?\n", " ", text)
    directives, code = [], []
    for line in text.split("\n"):
        if line.lstrip().startswith("#"):
            directives.append(line.strip())
            code.append("")
        else:
            code.append(line)
    return directives, "\n".join(code)


def tokens(s):
    return TOKEN_RE.findall(s)


def strip_attributes(s):
    """Removes __attribute__((...)), __declspec(...), alignas(...), [[...]] and
    __extension__ / __asm__("...") decorations."""
    for kw in ("__attribute__", "__declspec", "_Alignas", "alignas", "__asm__", "__asm"):
        while True:
            m = re.search(r"\b%s\s*\(" % re.escape(kw), s)
            if not m:
                break
            depth, j = 0, m.end() - 1
            while j < len(s):
                if s[j] == "(":
                    depth += 1
                elif s[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            s = s[:m.start()] + " " + s[j + 1:]
    s = re.sub(r"\[\[.*?\]\]", " ", s)
    s = re.sub(r"\b__extension__\b", " ", s)
    return s


def split_top(s, sep=","):
    """Splits s at `sep` characters that are outside (), [] and {}."""
    parts, depth, cur = [], 0, []
    for c in s:
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return parts


def split_statements(code):
    """Splits code into top-level declarations: text up to a `;` outside braces.
    `extern "C" {` and its unmatched closing brace are dropped; a function *definition*
    (a brace body right after a `)`) ends its statement at the closing brace."""
    code = re.sub(r'extern\s*"C(\+\+)?"\s*\{', " ", code)
    code = re.sub(r'extern\s*"C(\+\+)?"', " extern ", code)
    stmts, cur, depth, body_start = [], [], 0, None
    for c in code:
        if c == "{":
            if depth == 0:
                body_start = "".join(cur).rstrip()
            depth += 1
            cur.append(c)
        elif c == "}":
            if depth == 0:        # closes extern "C" {
                if "".join(cur).strip():
                    stmts.append("".join(cur))
                cur = []
                continue
            depth -= 1
            cur.append(c)
            if depth == 0 and body_start is not None and body_start.endswith(")"):
                stmts.append("".join(cur))   # function definition
                cur = []
        elif c == ";" and depth == 0:
            stmts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        stmts.append("".join(cur))
    return [re.sub(r"\s+", " ", s).strip() for s in stmts if s.strip()]


def matching_paren(toks, i):
    """Index of the token closing the bracket opened at toks[i]."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    open_, close, depth = toks[i], pairs[toks[i]], 0
    for j in range(i, len(toks)):
        if toks[j] == open_:
            depth += 1
        elif toks[j] == close:
            depth -= 1
            if depth == 0:
                return j
    raise ParseError("unbalanced %r in %s" % (open_, " ".join(toks)))


# ---------------------------------------------------------------------------------------
# Types
# ---------------------------------------------------------------------------------------

class CType:
    """base: canonical base name (a word sequence or a canonical function-pointer
    string); bquals: qualifiers of the base; ptrs: list of qualifier sets, one per `*`
    (outermost last)."""

    def __init__(self, base, bquals=(), ptrs=()):
        self.base = base
        self.bquals = frozenset(bquals)
        self.ptrs = [frozenset(p) for p in ptrs]

    def drop_top_quals(self):
        if self.ptrs:
            return CType(self.base, self.bquals, self.ptrs[:-1] + [frozenset()])
        return CType(self.base, (), [])

    def render(self):
        s = " ".join(sorted(self.bquals) + [self.base])
        for i, q in enumerate(self.ptrs):
            s += (" *" if i == 0 else "*") + "".join(" %s " % x for x in sorted(q)).rstrip()
        return s

    def __eq__(self, other):
        return self.render() == other.render()

    def __hash__(self):
        return hash(self.render())

    def __repr__(self):
        return self.render()


def canon_base_words(words):
    """Canonical spelling of a base type given as specifier words (no qualifiers)."""
    words = [w for w in words if w not in TAG_KEYWORDS and w not in STORAGE_WORDS]
    if not words:
        raise ParseError("no type")
    if all(w in BUILTIN_TYPE_WORDS for w in words):
        longs = words.count("long")
        has = set(words)
        if "char" in has:
            sign = "signed " if "signed" in has else "unsigned " if "unsigned" in has else ""
            return sign + "char"
        for fl in ("float", "double", "void", "_Bool", "bool", "__int128"):
            if fl in has:
                return ("long " if longs and fl == "double" else "") + fl
        size = "short" if "short" in has else "long long" if longs >= 2 else \
            "long" if longs == 1 else "int"
        return ("unsigned " if "unsigned" in has else "") + size
    return " ".join(words)


class TypeParser:
    def __init__(self, aliases):
        self.aliases = dict(aliases)
        self._alias_cache = {}

    # -- alias expansion --------------------------------------------------------------
    def alias(self, name, seen=()):
        if name not in self.aliases or name in seen:
            return None
        if name not in self._alias_cache:
            t, _, _ = self.decl(tokens(self.aliases[name]), seen=seen + (name,))
            self._alias_cache[name] = t
        return self._alias_cache[name]

    # -- declarations -----------------------------------------------------------------
    def decl(self, toks, seen=(), want_name=True):
        """Parses one declaration (parameter, field, object, alias value).
        Returns (CType, name or None, dims: list of dimension token strings)."""
        toks = [t for t in toks if t not in STORAGE_WORDS]
        if not toks:
            raise ParseError("empty declaration")
        if toks == ["..."]:
            return CType("..."), None, []
        if "(" in toks:
            return self._funcptr_decl(toks, seen)
        dims = []
        while toks and toks[-1] == "]":
            j = len(toks) - 1
            while toks[j] != "[":
                j -= 1
            dims.insert(0, " ".join(toks[j + 1:-1]))
            toks = toks[:j]
        name = None
        if want_name and len(toks) >= 2 and IDENT_RE.match(toks[-1]) \
                and toks[-1] not in BUILTIN_TYPE_WORDS and toks[-1] not in QUALIFIERS \
                and toks[-2] not in TAG_KEYWORDS \
                and any(t not in QUALIFIERS for t in toks[:-1]):
            name = toks[-1]
            toks = toks[:-1]
        return self._type(toks, seen), name, dims

    def _type(self, toks, seen):
        if "*" in toks:
            k = toks.index("*")
            base_toks, rest = toks[:k], toks[k:]
        else:
            base_toks, rest = toks, []
        bquals = {t for t in base_toks if t in QUALIFIERS}
        words = [t for t in base_toks if t not in QUALIFIERS]
        ptrs = []
        for t in rest:
            if t == "*":
                ptrs.append(set())
            elif t in QUALIFIERS:
                ptrs[-1].add(t)
            else:
                raise ParseError("unexpected %r in type %s" % (t, " ".join(toks)))
        base = canon_base_words(words)
        al = self.alias(base, seen) if len(words) == 1 else None
        if al is not None:
            # qualifiers written on the alias name apply to what it stands for
            if al.ptrs:
                inner = al.ptrs[:-1] + [al.ptrs[-1] | bquals]
                return CType(al.base, al.bquals, inner + ptrs)
            return CType(al.base, al.bquals | bquals, ptrs)
        return CType(base, bquals, ptrs)

    def _funcptr_decl(self, toks, seen):
        """RET ( * [quals] [name] [dims] ) ( PARAMS )  -- pointer to function."""
        i = toks.index("(")
        j = matching_paren(toks, i)
        inner = toks[i + 1:j]
        after = toks[j + 1:]
        if not inner or inner[0] != "*" or not after or after[0] != "(":
            raise ParseError("unsupported declarator: %s" % " ".join(toks))
        k = matching_paren(after, 0)
        if k != len(after) - 1:
            raise ParseError("unsupported declarator: %s" % " ".join(toks))
        ret = self._type(toks[:i], seen).drop_top_quals()
        params = self.params(after[1:k], seen)
        nstars = inner.count("*")
        names = [t for t in inner if IDENT_RE.match(t) and t not in QUALIFIERS]
        base = "%s(*)(%s)" % (ret.render(), ", ".join(p.render() for p in params) or "void")
        return CType(base, (), [set()] * (nstars - 1)), (names[0] if names else None), []

    def params(self, toks, seen=()):
        """Canonical parameter types of a parameter-list token sequence."""
        text = " ".join(toks).strip()
        if text in ("", "void"):
            return []
        out = []
        for p in split_top(text):
            t, _, dims = self.decl(tokens(p), seen)
            if dims:      # array parameter decays to a pointer
                t = CType(t.base, t.bquals, t.ptrs + [set()])
            out.append(t.drop_top_quals())
        return out


# ---------------------------------------------------------------------------------------
# Header model
# ---------------------------------------------------------------------------------------

class Function:
    def __init__(self, name, ret, params, text, where):
        self.name, self.ret, self.params, self.text, self.where = name, ret, params, text, where

    def signature(self):
        return "%s %s(%s)" % (self.ret.render(), self.name,
                              ", ".join(p.render() for p in self.params) or "void")


class Header:
    """Declarations of one or more header files."""

    def __init__(self, tp):
        self.tp = tp
        self.functions = {}     # name -> Function
        self.objects = {}       # name -> (CType, where)
        self.typedefs = {}      # name -> (CType or None, kind, where); kind: plain/struct/enum
        self.structs = {}       # canonical name -> (fields or None, where)
        self.enums = {}         # enumerator -> (value expression, where)
        self.macros = {}        # object-like macro -> body
        self.fmacros = set()    # function-like macro names
        self.duplicates = []    # (name, where, first where) with differing declarations
        self.skipped = []       # (statement, reason)

    # -- loading ---------------------------------------------------------------------
    def load(self, path):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        self.load_text(text, os.path.basename(path))
        return self

    def load_text(self, text, where):
        directives, code = split_preprocessor(strip_comments(text))
        empty_macros = set()
        for d in directives:
            m = re.match(r"#\s*define\s+([A-Za-z_]\w*)(\()?\s*(.*)$", d)
            if not m:
                continue
            if m.group(2):
                self.fmacros.add(m.group(1))
            else:
                self.macros.setdefault(m.group(1), m.group(3).strip())
                if not m.group(3).strip():
                    empty_macros.add(m.group(1))
        for st in split_statements(code):
            st = strip_attributes(st)
            for em in empty_macros:   # e.g. #define RAMP_API  (decoration macros)
                st = re.sub(r"\b%s\b" % re.escape(em), " ", st)
            st = re.sub(r"\s+", " ", st).strip()
            if not st:
                continue
            try:
                self._statement(st, where)
            except ParseError as e:
                self.skipped.append((st, str(e)))

    def _statement(self, st, where):
        toks = tokens(st)
        if toks[0] == "typedef":
            self._typedef(st, toks[1:], where)
            return
        if toks[0] in ("static",) or "static" in toks[:3]:
            self.skipped.append((st, "static (not exported)"))
            return
        if toks[0] in TAG_KEYWORDS and "{" in toks:
            self._aggregate(toks, None, where)
            return
        if "{" in toks:
            self.skipped.append((st, "definition"))
            return
        if toks[0] in TAG_KEYWORDS and len(toks) == 2:
            return                      # forward declaration: struct x;
        is_extern = toks[0] == "extern"
        body = [t for t in toks if t != "extern"]
        if "(" in body and body[-1] == ")":
            # function, unless the name sits in (*name): a function-pointer object
            k = len(body) - 1
            depth = 0
            while k >= 0:
                if body[k] == ")":
                    depth += 1
                elif body[k] == "(":
                    depth -= 1
                    if depth == 0:
                        break
                k -= 1
            head, plist = body[:k], body[k + 1:-1]
            if head and IDENT_RE.match(head[-1]) and head[-1] not in BUILTIN_TYPE_WORDS:
                name = head[-1]
                ret = self.tp._type(head[:-1], ()).drop_top_quals()
                self._add_function(Function(name, ret, self.tp.params(plist), st, where))
                return
        # data object (possibly a function pointer)
        if not is_extern:
            self.skipped.append((st, "non-extern object declaration"))
            return
        for i, piece in enumerate(split_top(" ".join(body))):
            ptoks = tokens(piece)
            if i > 0:   # int a, b;  -> b shares a's base type
                base = [t for t in tokens(split_top(" ".join(body))[0])
                        if t != "*"][:-1]
                ptoks = base + ptoks
            t, name, dims = self.tp.decl(ptoks)
            if name is None:
                raise ParseError("object without a name")
            if dims:
                t = CType(t.base + "".join("[%s]" % d for d in dims), t.bquals, t.ptrs)
            self.objects.setdefault(name, (t, where))

    def _add_function(self, fn):
        old = self.functions.get(fn.name)
        if old is None:
            self.functions[fn.name] = fn
        elif old.signature() != fn.signature():
            self.duplicates.append((fn.name, fn.where, old.where))

    def _typedef(self, st, toks, where):
        if "{" in toks:
            i = toks.index("{")
            j = matching_paren(toks, i)
            names = [t for t in toks[j + 1:] if IDENT_RE.match(t)]
            kind = self._aggregate(toks[:j + 1], names, where)
            for n in names:
                self.typedefs[n] = (None, kind, where)
            return
        t, name, dims = self.tp.decl(toks)
        if name is None:
            raise ParseError("typedef without a name")
        if dims:
            t = CType(t.base + "".join("[%s]" % d for d in dims), t.bquals, t.ptrs)
        # a typedef naming a struct/enum by tag only
        kind = "plain"
        self.typedefs[name] = (t, kind, where)

    def _aggregate(self, toks, typedef_names, where):
        """struct/union/enum [tag] { body } -- records fields or enumerators."""
        kw = toks[0]
        i = toks.index("{")
        j = matching_paren(toks, i)
        tag = toks[1] if i == 2 else None
        body = toks[i + 1:j]
        if kw == "enum":
            expr = None        # expression of the previous enumerator
            for item in split_top(" ".join(body)):
                item = item.strip()
                if not item:
                    continue
                n, eq, v = item.partition("=")
                n = n.strip()
                if eq:
                    expr = v.strip()
                else:
                    expr = "0" if expr is None else "(%s)+1" % expr
                self.enums[n] = (expr, where)
            return "enum"
        fields = self._fields(body)
        keys = set()
        if tag:
            keys.add(self.canon_name(tag))
        for n in typedef_names or ():
            keys.add(self.canon_name(n))
        for k in keys:
            self.structs.setdefault(k, (fields, where))
        return kw

    def canon_name(self, name):
        al = self.tp.alias(name)
        if al is not None and not al.ptrs:
            return al.base
        return name

    def _fields(self, body):
        """[(type, name, dims)] of a struct body, or None if it is too complex."""
        if "{" in body or "(" in body:
            return None
        fields = []
        for decl in split_top(" ".join(body), ";"):
            decl = decl.strip()
            if not decl:
                continue
            pieces = split_top(decl)
            first = tokens(pieces[0])
            t0, n0, d0 = self.tp.decl(first)
            if n0 is None:
                return None
            k = first.index("*") if "*" in first else first.index(n0)
            base = first[:k]
            fields.append((t0, n0, d0))
            for p in pieces[1:]:
                t, n, d = self.tp.decl(base + tokens(p))
                fields.append((t, n, d))
        return fields

    # -- evaluation ------------------------------------------------------------------
    def constants(self):
        """name -> expression text for object-like macros and enumerators."""
        out = {n: (v, "macro") for n, v in self.macros.items()}
        for n, (v, _) in self.enums.items():
            out[n] = (v, "enum")
        return out

    def evaluate(self, expr, depth=0):
        """Integer or string value of a constant expression, or None."""
        if depth > 20 or expr is None:
            return None
        expr = expr.strip()
        if re.fullmatch(r'"(?:[^"\\]|\\.)*"', expr):
            return ast.literal_eval(expr)
        # casts to integer types: (uint32_t)5, (int)(x)
        expr = re.sub(r"\(\s*(?:const\s+)?(?:unsigned\s+|signed\s+)?"
                      r"(?:u?int(?:8|16|32|64)_t|u?intptr_t|size_t|int|long|short|char|"
                      r"long\s+long|handler_t|tag_t|op_t)\s*\)", " ", expr)
        expr = re.sub(r"\b(0[xX][0-9A-Fa-f]+|\d+)[uUlL]+\b", r"\1", expr)
        names = set(re.findall(r"[A-Za-z_]\w*", expr))
        consts = self.constants()
        for n in names:
            if n not in consts:
                return None
            v = self.evaluate(consts[n][0], depth + 1)
            if not isinstance(v, int):
                return None
            expr = re.sub(r"\b%s\b" % n, "(%d)" % v, expr)
        expr = expr.replace("/", "//")
        try:
            node = ast.parse(expr, mode="eval")
        except SyntaxError:
            return None
        return _safe_eval(node.body)


_BINOPS = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b, ast.FloorDiv: lambda a, b: int(a / b) if b else None,
    ast.Mod: lambda a, b: a % b if b else None, ast.LShift: lambda a, b: a << b,
    ast.RShift: lambda a, b: a >> b, ast.BitAnd: lambda a, b: a & b,
    ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b,
}


def _safe_eval(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.UnaryOp):
        v = _safe_eval(node.operand)
        if v is None:
            return None
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return v
        if isinstance(node.op, ast.Invert):
            return ~v
        return None
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        a, b = _safe_eval(node.left), _safe_eval(node.right)
        if a is None or b is None:
            return None
        return _BINOPS[type(node.op)](a, b)
    return None


# ---------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------

def parse_nm(text):
    """`nm -D --defined-only` output -> {symbol: type letter}."""
    syms = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[-1], parts[-2]
        if len(kind) != 1:
            continue
        name = name.split("@", 1)[0]
        syms.setdefault(name, kind)
    return syms


def run_nm(lib):
    try:
        r = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True,
                           text=True, check=False)
    except OSError as e:
        raise SystemExit("check_headers: cannot run nm: %s" % e)
    if r.returncode != 0:
        raise SystemExit("check_headers: nm -D --defined-only %s failed: %s"
                         % (lib, r.stderr.strip()))
    return r.stdout


def read_exports(path):
    names = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.split("#", 1)[0].strip().rstrip(";")
            if line:
                names.append(line)
    return names


def cargo_version(path):
    """version = "x.y.z" of the [package] section."""
    section = None
    with open(path, encoding="utf-8") as f:
        for line in f:
            s = line.split("#", 1)[0].strip()
            m = re.match(r"^\[\s*([^\]]+?)\s*\]$", s)
            if m:
                section = m.group(1)
                continue
            if section == "package":
                m = re.match(r'^version\s*=\s*"([^"]*)"', s)
                if m:
                    return m.group(1)
    return None


# ---------------------------------------------------------------------------------------
# The checks
# ---------------------------------------------------------------------------------------

class Report:
    def __init__(self, verbose=False, out=sys.stdout):
        self.passed = 0
        self.failures = []
        self.notes = []
        self.verbose = verbose
        self.out = out

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
            if self.verbose:
                print("ok    %s" % what, file=self.out)
        else:
            msg = what + (": " + detail if detail else "")
            self.failures.append(msg)
            print("FAIL  %s" % msg, file=self.out)
        return ok

    def note(self, msg):
        self.notes.append(msg)
        if self.verbose:
            print("note  %s" % msg, file=self.out)


def types_match(hdr, gen):
    h, g = hdr.render(), gen.render()
    if h == g:
        return True
    # Rust has no volatile pointee: a `const volatile T *` of include/ (ramp_WaitFlag's
    # flag) is generated as `const T *`.  Only in that direction.
    if re.search(r"\bvolatile\b", h) and re.sub(r"\s*\bvolatile\b", "", h) == g:
        return True
    if GEN_INT32_MATCHES_HEADER_INT:
        return re.sub(r"\bint32_t\b", "int", g) == h and re.search(r"\bint\b", h) is not None
    return False


def compare_functions(name, hfn, gfn):
    """List of human-readable differences between two prototypes."""
    diffs = []
    if not types_match(hfn.ret, gfn.ret):
        diffs.append("return type: include/ has '%s', generated has '%s'"
                     % (hfn.ret.render(), gfn.ret.render()))
    if len(hfn.params) != len(gfn.params):
        diffs.append("parameter count: include/ has %d, generated has %d"
                     % (len(hfn.params), len(gfn.params)))
    for i, (hp, gp) in enumerate(zip(hfn.params, gfn.params)):
        if not types_match(hp, gp):
            diffs.append("parameter %d: include/ has '%s', generated has '%s'"
                         % (i + 1, hp.render(), gp.render()))
    return diffs


def run_checks(cfg, rep):
    tp = TypeParser(dict(ALIASES, **cfg.aliases))

    # a. the hand-written headers ------------------------------------------------------
    declared = Header(tp)
    for h in cfg.headers:
        path = os.path.join(cfg.include_dir, h) if not os.path.isabs(h) else h
        if not rep.check(os.path.isfile(path), "header %s exists" % path):
            continue
        one = Header(tp).load(path)
        rep.check(bool(one.functions), "prototypes parsed from %s" % h,
                  "no function prototype found")
        for st, why in one.skipped:
            rep.note("%s: skipped '%s' (%s)" % (h, st[:80], why))
        declared.load(path)
    for name, where, first in declared.duplicates:
        rep.check(False, "single declaration of %s" % name,
                  "declared differently in %s and %s" % (first, where))

    # every name declared anywhere in include/ (for "missing from include/")
    everywhere = Header(tp)
    if os.path.isdir(cfg.include_dir):
        for fn in sorted(os.listdir(cfg.include_dir)):
            if fn.endswith(".h"):
                everywhere.load(os.path.join(cfg.include_dir, fn))
    for h in cfg.headers:
        if os.path.isabs(h) and os.path.isfile(h):
            everywhere.load(h)
    include_names = set(everywhere.functions) | set(everywhere.objects)

    exports = []
    if cfg.exports:
        if rep.check(os.path.isfile(cfg.exports), "shim export list %s exists" % cfg.exports):
            exports = read_exports(cfg.exports)
            rep.check(bool(exports), "shim export list is not empty")

    # b. exported symbols -----------------------------------------------------------------
    syms = None
    if cfg.nm_output:
        with open(cfg.nm_output, encoding="utf-8") as f:
            syms = parse_nm(f.read())
    elif cfg.lib:
        if rep.check(os.path.isfile(cfg.lib), "library %s exists" % cfg.lib):
            syms = parse_nm(run_nm(cfg.lib))
    if syms is not None:
        for name in sorted(declared.functions):
            kind = syms.get(name)
            if kind is None:
                rep.check(False, "function %s is exported" % name,
                          "declared in %s but not in the library's dynamic symbols"
                          % declared.functions[name].where)
            else:
                rep.check(kind in "TWi", "function %s is exported" % name,
                          "exported as symbol type '%s', not a function" % kind)
        for name in sorted(declared.objects):
            kind = syms.get(name)
            if kind is None:
                rep.check(False, "object %s is exported" % name,
                          "declared in %s but not in the library's dynamic symbols"
                          % declared.objects[name][1])
            else:
                rep.check(kind not in "TtiU", "object %s is exported" % name,
                          "exported as symbol type '%s', not data" % kind)
    else:
        rep.note("no --lib / --nm-output: export checks skipped")

    # c. the generated header ------------------------------------------------------------
    gen = None
    if cfg.generated:
        if rep.check(os.path.isfile(cfg.generated), "generated header %s exists"
                     % cfg.generated):
            gen = Header(tp).load(cfg.generated)
            rep.check(bool(gen.functions), "prototypes parsed from the generated header",
                      "no function prototype found")
            for st, why in gen.skipped:
                rep.note("generated: skipped '%s' (%s)" % (st[:80], why))
    if gen is not None:
        for name in sorted(set(declared.functions) & set(gen.functions)):
            hfn, gfn = declared.functions[name], gen.functions[name]
            diffs = compare_functions(name, hfn, gfn)
            rep.check(not diffs, "prototype of %s matches the generated one" % name,
                      "; ".join(diffs) + "\n        include/:  %s\n        generated: %s"
                      % (hfn.signature(), gfn.signature()))
        for name in sorted(set(gen.functions)):
            if name.startswith(INTERNAL_PREFIX):
                continue
            rep.check(name in include_names,
                      "generated function %s is declared in include/" % name,
                      "Rust exports it but no header in %s declares it" % cfg.include_dir)
        for name in sorted(set(gen.objects)):
            if name.startswith(INTERNAL_PREFIX):
                continue
            if not rep.check(name in include_names,
                             "generated object %s is declared in include/" % name,
                             "Rust exports it but no header in %s declares it"
                             % cfg.include_dir):
                continue
            if name in declared.objects:
                ht, gt = declared.objects[name][0], gen.objects[name][0]
                rep.check(types_match(ht, gt), "type of object %s matches" % name,
                          "include/ has '%s', generated has '%s'" % (ht, gt))
        for name in sorted(set(declared.typedefs) & set(gen.typedefs)):
            ht, hk, _ = declared.typedefs[name]
            gt, gk, _ = gen.typedefs[name]
            if ht is None or gt is None:
                continue            # struct/enum bodies are compared below
            rep.check(types_match(ht, gt), "typedef %s matches" % name,
                      "include/ has '%s', generated has '%s'" % (ht, gt))
        for key in sorted(set(declared.structs) & set(gen.structs)):
            hf, hw = declared.structs[key]
            gf, _ = gen.structs[key]
            if hf is None or gf is None:
                rep.note("struct %s: too complex to compare" % key)
                continue
            diffs = []
            if len(hf) != len(gf):
                diffs.append("%d fields in include/, %d generated" % (len(hf), len(gf)))
            for i, ((ht, hn, hd), (gt, gn, gd)) in enumerate(zip(hf, gf)):
                hdv = [declared.evaluate(d) for d in hd]
                gdv = [gen.evaluate(d) for d in gd]
                if hn != gn or not types_match(ht, gt) or hdv != gdv:
                    diffs.append("field %d: include/ '%s %s%s', generated '%s %s%s'"
                                 % (i + 1, ht, hn, "".join("[%s]" % d for d in hd),
                                    gt, gn, "".join("[%s]" % d for d in gd)))
            rep.check(not diffs, "layout of struct %s matches" % key, "; ".join(diffs[:6]))
        hc, gc = declared.constants(), gen.constants()
        for name in sorted(set(hc) & set(gc)):
            hv, gv = declared.evaluate(hc[name][0]), gen.evaluate(gc[name][0])
            if hv is None or gv is None:
                rep.note("constant %s: not evaluable (%r / %r)" % (name, hc[name][0],
                                                                   gc[name][0]))
                continue
            rep.check(hv == gv, "constant %s matches" % name,
                      "include/ has %r, generated has %r" % (hv, gv))

    # every function of include/ is implemented somewhere (needs the generated header)
    gen_names = set(gen.functions) if gen is not None else set()
    for name in sorted(declared.functions):
        if gen is None:
            break
        rep.check(name in gen_names or name in exports,
                  "function %s is implemented" % name,
                  "in neither the generated header (Rust) nor %s (C shim)"
                  % (cfg.exports or "the export list"))
    for name in exports:
        rep.check(name in include_names, "shim export %s is declared in include/" % name,
                  "listed in %s but declared in no header" % cfg.exports)
        if gen is not None:
            rep.check(name not in gen_names, "shim export %s is not also a Rust function"
                      % name, "defined both in the C shim and in Rust")

    # d. versions ----------------------------------------------------------------------
    if cfg.cargo:
        if rep.check(os.path.isfile(cfg.cargo), "Cargo manifest %s exists" % cfg.cargo):
            version = cargo_version(cfg.cargo)
            m = re.fullmatch(r"(\d+)\.(\d+)\.(\d+)(?:[-+].*)?", version or "")
            if rep.check(m is not None, "Cargo.toml [package] version is x.y.z",
                         "found %r" % version):
                major, minor, patch = (int(x) for x in m.groups())
                consts = declared.constants()
                vals = {}
                for part, want in (("MAJOR", major), ("MINOR", minor), ("PATCH", patch)):
                    n = "RAMP_VERSION_" + part
                    v = declared.evaluate(consts[n][0]) if n in consts else None
                    vals[part] = v
                    rep.check(v == want, "%s matches Cargo.toml" % n,
                              "header has %r, Cargo.toml version %s has %d"
                              % (v, version, want))
                n = "RAMP_VERSION_STRING"
                v = declared.evaluate(consts[n][0]) if n in consts else None
                want_s = "%d.%d.%d" % (major, minor, patch)
                rep.check(v == want_s, "%s matches Cargo.toml" % n,
                          "header has %r, Cargo.toml has %r" % (v, want_s))
                n = "RAMP_VERSION"
                v = declared.evaluate(consts[n][0]) if n in consts else None
                if None not in vals.values():
                    want_v = vals["MAJOR"] * 10000 + vals["MINOR"] * 100 + vals["PATCH"]
                    rep.check(v == want_v, "RAMP_VERSION == MAJOR*10000 + MINOR*100 + PATCH",
                              "RAMP_VERSION is %r, expected %d" % (v, want_v))
                rep.check(v == major * 10000 + minor * 100 + patch,
                          "RAMP_VERSION matches Cargo.toml",
                          "RAMP_VERSION is %r, Cargo.toml %s gives %d"
                          % (v, version, major * 10000 + minor * 100 + patch))
    return rep


class Config:
    def __init__(self, **kw):
        here = os.path.dirname(os.path.abspath(__file__))
        root = os.path.dirname(here)
        self.include_dir = os.path.join(root, "include")
        self.headers = list(DEFAULT_HEADERS)
        self.exports = os.path.join(root, "src", "ffi", "c", "exports.txt")
        self.lib = None
        self.nm_output = None
        self.generated = None
        self.cargo = None
        self.aliases = {}
        self.__dict__.update(kw)


# ---------------------------------------------------------------------------------------
# Self-test
# ---------------------------------------------------------------------------------------

SELFTEST_AM_H = r"""
/* a miniature am.h; prototypes spread over lines, comments containing ; and ( ) */
#ifndef T_AM_H
#define T_AM_H
#include <stdint.h>
#include <stddef.h>
#include <stdarg.h>
#ifdef __cplusplus
extern "C" {
#endif
typedef uint64_t tag_t;
typedef uint8_t  handler_t;
typedef struct ramp_bundle   *eb_t;
typedef struct ramp_endpoint *ep_t;
typedef struct ramp_en { uint64_t _opaque[4]; } en_t;
typedef void (*am_handler_fn_t)();
#define AM_OK 0
#define AM_ERR_BAD_ARG 2   /* a (comment); */
#define AM_MaxShort() 16
#define AM_Request1(ep, d, h, a0) \
  ramp_Request((ep), (d), (h), 1, (int32_t)(a0))
int AM_Init(void);   // trailing comment; with a semicolon
int AM_SetTag(ep_t ea,
              tag_t tag);
int AM_GetSeg(ep_t ea, void **addr,
              uintptr_t *nbytes);
int _AM_SetHandler(ep_t ea, handler_t handler, am_handler_fn_t function);
int AM_Poll(eb_t bundle);
int AM_Map(ep_t ea, int index, en_t name, tag_t tag);
int ramp_Request(ep_t ep, uint32_t dest, handler_t handler, int numargs, ...);
int ramp_RequestVA(ep_t ep, uint32_t dest, handler_t handler, int numargs, va_list argptr);
#ifdef __cplusplus
}
#endif
#endif
"""

SELFTEST_RAMP_H = r"""
#ifndef T_RAMP_H
#define T_RAMP_H
#include "am.h"
#ifdef __cplusplus
extern "C" {
#endif
#define RAMP_VERSION_MAJOR 0
#define RAMP_VERSION_MINOR 1
#define RAMP_VERSION_PATCH 0
#define RAMP_VERSION \
  ((RAMP_VERSION_MAJOR) * 10000 + (RAMP_VERSION_MINOR) * 100 + (RAMP_VERSION_PATCH))
#define RAMP_VERSION_STRING "0.1.0"
typedef enum { ramp_Short = 0, ramp_Medium = 1, ramp_Long = 2, ramp_NumCategories = 3 }
  ramp_category_t;
typedef struct ramp_stats {
  uint64_t RequestsSent[3], RepliesSent[3];
  uint64_t TotalBytesSent;
} ramp_stats_t;
const char *ramp_ErrorName(int code);
int ramp_enToString(en_t name, char *buf, size_t len);
int ramp_AggregateStatistics(ramp_stats_t *runningsum, const ramp_stats_t *newvalues);
int ramp_RequestArgv(ep_t ep, uint32_t dest, handler_t handler, int category,
                     const void *source_addr, size_t nbytes, uintptr_t dest_offset,
                     int async, int numargs, const int32_t *args);
extern const ramp_stats_t ramp_initial_stats;
#ifdef __cplusplus
}
#endif
#endif
"""

# cbindgen-style: both styles of naming, uintptr_t for size_t, int32_t for int,
# `void const *`, a function-pointer parameter, // comments, a static, an internal name.
SELFTEST_GEN_GOOD = r"""
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#define AM_OK 0

#define AM_ERR_BAD_ARG 2

#define RAMP_NUM_CATEGORIES 3

typedef struct ramp_bundle ramp_bundle;

typedef struct ramp_endpoint ramp_endpoint;

typedef struct ramp_en {
  uint64_t _opaque[4];
} ramp_en;

typedef struct ramp_stats {
  uint64_t RequestsSent[RAMP_NUM_CATEGORIES];
  uint64_t RepliesSent[RAMP_NUM_CATEGORIES];
  uint64_t TotalBytesSent;
} ramp_stats;

typedef ramp_en en_t;

typedef uint64_t tag_t;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

int32_t AM_Init(void);

int AM_SetTag(ramp_endpoint *ea, tag_t tag);

int AM_GetSeg(struct ramp_endpoint *ea, void **addr, uintptr_t *nbytes);

int _AM_SetHandler(ramp_endpoint *ea, uint8_t handler, void (*function)(void));

int AM_Poll(ramp_bundle *bundle);

int AM_Map(ramp_endpoint *ea, int32_t index, en_t name, uint64_t tag);

const char *ramp_ErrorName(int code);

int ramp_enToString(ramp_en name, char *buf, uintptr_t len);

int ramp_AggregateStatistics(ramp_stats *runningsum, ramp_stats const *newvalues);

int ramp_RequestArgv(ramp_endpoint *ep,
                     uint32_t dest,
                     uint8_t handler,
                     int category,
                     void const *source_addr,
                     uintptr_t nbytes,
                     uintptr_t dest_offset,
                     int async,
                     int numargs,
                     const int32_t args[16]);

int ramp_internal_selftest_hook(void);

extern const ramp_stats ramp_initial_stats;

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus
"""

SELFTEST_NM_GOOD = """\
0000000000012340 T AM_Init
0000000000012350 T AM_SetTag@@RAMP_0
0000000000012360 T AM_GetSeg
0000000000012370 T _AM_SetHandler
0000000000012380 T AM_Poll
0000000000012390 T AM_Map
00000000000123a0 T ramp_Request
00000000000123b0 T ramp_RequestVA
00000000000123c0 T ramp_ErrorName
00000000000123d0 T ramp_enToString
00000000000123e0 T ramp_AggregateStatistics
00000000000123f0 T ramp_RequestArgv
0000000000012400 T ramp_internal_selftest_hook
0000000000098760 R ramp_initial_stats
0000000000000000 A RAMP_0
"""

SELFTEST_EXPORTS = "ramp_Request\nramp_RequestVA\n"
SELFTEST_CARGO = '[package]\nname = "ramp"\nversion = "0.1.0"\n\n[dependencies]\n' \
                 'libc = { version = "0.2" }\n'


def _selftest_case(tmp, label, am_h, ramp_h, gen_h, nm, exports, cargo):
    d = os.path.join(tmp, label)
    os.makedirs(os.path.join(d, "include"))
    files = {"include/am.h": am_h, "include/ramp.h": ramp_h, "ramp_gen.h": gen_h,
             "nm.txt": nm, "exports.txt": exports, "Cargo.toml": cargo}
    for rel, text in files.items():
        with open(os.path.join(d, rel), "w", encoding="utf-8") as f:
            f.write(text)
    cfg = Config(include_dir=os.path.join(d, "include"), exports=os.path.join(d, "exports.txt"),
                 nm_output=os.path.join(d, "nm.txt"), generated=os.path.join(d, "ramp_gen.h"),
                 cargo=os.path.join(d, "Cargo.toml"))
    import io
    buf = io.StringIO()
    rep = run_checks(cfg, Report(verbose=False, out=buf))
    return rep


def self_test():
    results = Report(verbose=True)
    with tempfile.TemporaryDirectory(prefix="check_headers_selftest_") as tmp:
        # 1. a consistent pair passes
        good = _selftest_case(tmp, "good", SELFTEST_AM_H, SELFTEST_RAMP_H, SELFTEST_GEN_GOOD,
                              SELFTEST_NM_GOOD, SELFTEST_EXPORTS, SELFTEST_CARGO)
        results.check(not good.failures and good.passed >= 30,
                      "consistent headers pass (%d checks)" % good.passed,
                      "unexpected failures: " + " | ".join(good.failures))

        # 2. a deliberately mismatched pair fails, with each planted fault reported
        bad_gen = (SELFTEST_GEN_GOOD
                   .replace("int AM_SetTag(ramp_endpoint *ea, tag_t tag);",
                            "int AM_SetTag(ramp_endpoint *ea, uint32_t tag);")
                   .replace("int AM_GetSeg(struct ramp_endpoint *ea, void **addr, "
                            "uintptr_t *nbytes);",
                            "int AM_GetSeg(struct ramp_endpoint *ea, void **addr);")
                   .replace("const char *ramp_ErrorName(int code);",
                            "char *ramp_ErrorName(int code);\n\nint ramp_Secret(void);")
                   .replace("  uint64_t RepliesSent[RAMP_NUM_CATEGORIES];\n"
                            "  uint64_t TotalBytesSent;",
                            "  uint64_t TotalBytesSent;\n"
                            "  uint64_t RepliesSent[RAMP_NUM_CATEGORIES];")
                   .replace("#define AM_ERR_BAD_ARG 2", "#define AM_ERR_BAD_ARG 22"))
        bad_ramp_h = (SELFTEST_RAMP_H
                      .replace('"0.1.0"', '"0.1.1"')
                      .replace("(RAMP_VERSION_MINOR) * 100", "(RAMP_VERSION_MINOR) * 1000")
                      .replace("extern const", "int ramp_Ghost(int);\nextern const"))
        bad_am_h = SELFTEST_AM_H.replace(
            "int _AM_SetHandler(ep_t ea, handler_t handler, am_handler_fn_t function);",
            "int _AM_SetHandler(ep_t ea, handler_t handler, am_handler_fn_t function);\n"
            "int AM_Ghost2(\n  void);")
        bad_nm = SELFTEST_NM_GOOD.replace("0000000000012380 T AM_Poll\n", "") \
            .replace("R ramp_initial_stats", "T ramp_initial_stats")
        bad_exports = SELFTEST_EXPORTS + "ramp_NotDeclared\n"
        bad = _selftest_case(tmp, "bad", bad_am_h, bad_ramp_h, bad_gen, bad_nm, bad_exports,
                             SELFTEST_CARGO.replace('version = "0.1.0"',
                                                    'version = "0.1.0"', 1))
        expected = [
            ("parameter type mismatch", "prototype of AM_SetTag matches",
             "parameter 2: include/ has 'uint64_t', generated has 'uint32_t'"),
            ("parameter count mismatch", "prototype of AM_GetSeg matches", "parameter count"),
            ("return type mismatch", "prototype of ramp_ErrorName matches", "return type"),
            ("missing export", "function AM_Poll is exported", "not in the library"),
            ("object exported as code", "object ramp_initial_stats is exported",
             "not data"),
            ("Rust function missing from include/", "ramp_Secret is declared in include/",
             ""),
            ("function implemented nowhere", "function ramp_Ghost is implemented", ""),
            ("multi-line prototype implemented nowhere", "function AM_Ghost2 is implemented",
             ""),
            ("shim export not declared", "shim export ramp_NotDeclared is declared", ""),
            ("undeclared export missing from the library", "function ramp_Ghost is exported",
             ""),
            ("struct field order", "layout of struct ramp_stats matches", "field 2"),
            ("constant value", "constant AM_ERR_BAD_ARG matches", "22"),
            ("version string", "RAMP_VERSION_STRING matches Cargo.toml", "0.1.1"),
            ("combined version formula", "RAMP_VERSION == MAJOR*10000", ""),
        ]
        for label, what, detail in expected:
            hit = [f for f in bad.failures if what in f and detail in f]
            results.check(bool(hit), "mismatched headers: %s reported" % label,
                          "no failure containing %r / %r among: %s"
                          % (what, detail, " | ".join(bad.failures)))
        results.check(not any("ramp_internal_" in f for f in bad.failures),
                      "ramp_internal_* names are exempt", " | ".join(bad.failures))
        # the things that are right in the bad case must still pass
        results.check(not any("prototype of ramp_RequestArgv" in f for f in bad.failures),
                      "aliases (size_t/uintptr_t, ep_t, handler_t, const, arrays) hold")

        # 3. a wrong Cargo version is caught
        cv = _selftest_case(tmp, "cargo", SELFTEST_AM_H, SELFTEST_RAMP_H, SELFTEST_GEN_GOOD,
                            SELFTEST_NM_GOOD, SELFTEST_EXPORTS,
                            SELFTEST_CARGO.replace('"0.1.0"', '"1.2.3"', 1))
        for part in ("MAJOR", "MINOR", "PATCH", "STRING"):
            results.check(any("RAMP_VERSION_%s matches Cargo.toml" % part in f
                              for f in cv.failures),
                          "Cargo version 1.2.3 vs header 0.1.0: %s reported" % part)
        results.check(len(cv.failures) == 5, "only the version checks fail",
                      " | ".join(cv.failures))

    # 4. the real headers of this repository parse completely
    cfg = Config()
    if os.path.isdir(cfg.include_dir):
        tp = TypeParser(ALIASES)
        real = Header(tp)
        for h in DEFAULT_HEADERS:
            p = os.path.join(cfg.include_dir, h)
            if os.path.isfile(p):
                real.load(p)
        results.check(not [s for s in real.skipped if "static" not in s[1]],
                      "real include/ headers parse without skipped declarations",
                      "; ".join("%s (%s)" % (s[:60], w) for s, w in real.skipped))
        results.check("ramp_initial_stats" in real.objects,
                      "real ramp.h declares the ramp_initial_stats object")
        for name in ("AM_Init", "_AM_SetHandler", "ramp_RequestXfer", "ramp_ReplyXferVA",
                     "ramp_RequestArgv", "ramp_DumpStatistics"):
            results.check(name in real.functions, "real headers declare %s" % name)
        if "ramp_RequestXfer" in real.functions:
            results.check(real.functions["ramp_RequestXfer"].params[-1].render() == "...",
                          "variadic prototypes keep their '...'")
        if os.path.isfile(cfg.exports):
            ex = read_exports(cfg.exports)
            variadic = sorted(n for n, f in real.functions.items()
                              if re.match(r"ramp_(Request|Reply)\w*$", n)
                              and (n.endswith("VA") or
                                   (f.params and f.params[-1].render() == "...")))
            results.check(len(variadic) == 12 and set(variadic) <= set(ex),
                          "exports.txt lists the 12 variadic shim functions",
                          ", ".join(ex))
            results.check(all(n.startswith(("ramp_", "AMUDP_", "AMX_", "AM_Init_AMUDP_"))
                              for n in ex),
                          "every shim export has the ramp_ prefix or is one of AMUDP's "
                          "link names (AMUDP_*, AMX_*, AM_Init_AMUDP_*)", ", ".join(ex))
    print("self-test: %d passed, %d failed" % (results.passed, len(results.failures)))
    return 0 if not results.failures else 1


# ---------------------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", help="libramp.so to inspect with nm -D --defined-only")
    ap.add_argument("--nm-output", help="use this saved `nm -D --defined-only` listing "
                                        "instead of running nm")
    ap.add_argument("--generated", help="cbindgen output (bindings/ramp_gen.h)")
    ap.add_argument("--cargo", help="Cargo.toml holding the package version")
    ap.add_argument("--include-dir", help="directory of the hand-written headers "
                                          "(default: include/ next to c-tests/)")
    ap.add_argument("--header", action="append",
                    help="header (in --include-dir, or a path) to check; repeatable; "
                         "default: am.h and ramp.h")
    ap.add_argument("--exports", help="export list of the C shim "
                                      "(default: src/ffi/c/exports.txt)")
    ap.add_argument("--alias", action="append", default=[], metavar="NAME=TYPE",
                    help="extra type equivalence, e.g. ramp_category_t=int")
    ap.add_argument("--self-test", action="store_true",
                    help="show on planted faults that the checker detects them")
    ap.add_argument("-v", "--verbose", action="store_true", help="list passing checks too")
    a = ap.parse_args(argv)

    if a.self_test:
        return self_test()

    cfg = Config()
    if a.include_dir:
        cfg.include_dir = a.include_dir
    if a.header:
        cfg.headers = a.header
    if a.exports:
        cfg.exports = a.exports
    cfg.lib, cfg.nm_output, cfg.generated, cfg.cargo = a.lib, a.nm_output, a.generated, a.cargo
    for spec in a.alias:
        name, sep, typ = spec.partition("=")
        if not sep or not IDENT_RE.match(name.strip()):
            ap.error("--alias wants NAME=TYPE, got %r" % spec)
        cfg.aliases[name.strip()] = typ.strip()
    if not (cfg.lib or cfg.nm_output or cfg.generated or cfg.cargo):
        ap.error("nothing to compare: give --lib/--nm-output, --generated and/or --cargo")

    rep = run_checks(cfg, Report(verbose=a.verbose))
    print("check_headers: %d passed, %d failed" % (rep.passed, len(rep.failures)))
    return 0 if not rep.failures else 1


if __name__ == "__main__":
    sys.exit(main())
