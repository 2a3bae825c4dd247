"""Expression code generation: a model expression becomes Python source over a row `r`.

`compile_expression(expr, scope)` returns a `Compiled` with two sources:
- `source`: Java/Siddhi semantics everywhere (null propagation, null on division by zero,
  comparisons with null are false);
- `fast`: the same without null guards on arithmetic and ordering comparisons. On a null or a
  zero divisor it raises TypeError/ZeroDivisionError instead of giving a wrong answer, so a
  stateless caller runs the fast version over a whole batch and reruns the batch with the safe
  one when it raises (`FALLBACK_ERRORS`).
The codegen never walks the tree per event. `Scope` resolves attribute references, so joins and
patterns plug in their own row shapes.
"""

import itertools
import math
import warnings
from dataclasses import dataclass, field

from cep.catalog import aggregators, ext, ext_processors, rules, scripts
from cep.engine import javamath
from cep.errors import (
    EngineError,
    TypeMismatchError,
    UnknownAttributeError,
    UnknownFunctionError,
    UnknownStreamError,
    attribute_list,
)
from cep.model import (
    And,
    AttrType,
    BinaryOp,
    CompareOp,
    Constant,
    FunctionCall,
    IsNull,
    Negate,
    Not,
    Or,
    TimeConstant,
)
from cep.model.expressions import Expression

FALLBACK_ERRORS = (TypeError, ZeroDivisionError)
HELPERS = {
    "_f32": javamath.f32,
    "_idiv32": javamath.idiv32,
    "_idiv64": javamath.idiv64,
    "_imod": javamath.imod,
    "_ddiv": javamath.ddiv,
    "_dmod": javamath.dmod,
    "_i2f": javamath.int_to_f32,
    "_l2d": lambda x: None if x is None else float(x),
}
_INTEGRAL = (AttrType.INT, AttrType.LONG)
_tmp_ids = itertools.count()


@dataclass(frozen=True)
class SourceRef(Expression):
    """An engine-internal leaf: ready-made Python source of a known type (aggregate values)."""

    source: str
    type: AttrType
    nullable: bool = True


@dataclass
class Compiled:
    source: str
    fast: str
    type: AttrType
    globals: dict = field(default_factory=dict)
    nullable: bool = True
    simple: bool = False  # cheap to evaluate twice (a variable or a constant)


class Scope:
    """Resolves attribute references of one input."""

    tables = {}  # table id -> Table, for `cond in Table`; the query builders set it
    state_event = False  # a join or pattern input: `having` may read it (see the selector)

    def resolve(self, variable):
        """-> (python source, AttrType); raise UnknownAttributeError when unknown."""
        raise NotImplementedError


class SingleStreamScope(Scope):
    """Attributes of one stream definition, read from `r[i]`; `reference` names (stream id or
    alias) may qualify them."""

    def __init__(self, definition, references=(), row="r"):
        self.definition = definition
        self.references = {definition.id, *[x for x in references if x]}
        self.row = row

    def resolve(self, variable):
        if variable.stream is not None and variable.stream not in self.references:
            raise UnknownAttributeError(
                f"'{variable.stream}.{variable.name}': '{variable.stream}' is not the input "
                f"stream '{self.definition.id}'",
                variable.span,
            )
        i = self.definition.index_of(variable.name)
        if i < 0:
            raise UnknownAttributeError(
                f"attribute '{variable.name}' does not exist in '{self.definition.id}' "
                f"({attribute_list((a.name, a.type) for a in self.definition.attributes)})",
                variable.span,
            )
        return f"{self.row}[{i}]", self.definition.attributes[i].type


def compile_expression(expr, scope):
    """Compile `expr` against `scope` into a `Compiled` (see the module docstring)."""
    return _Gen(scope).gen(expr)


class _Gen:
    def __init__(self, scope):
        self.scope = scope

    def gen(self, e):
        method = getattr(self, "_" + type(e).__name__, None)
        if method is None:
            hook = getattr(self.scope, "compile_special", None)
            if hook is not None:
                return hook(e, self)
            raise EngineError(f"cannot compile expression {type(e).__name__}")
        c = method(e)
        if isinstance(e, _FOLDABLE) and _literal_tree(e):
            c = _fold(c)
        return c

    # -- leaves --
    def _Constant(self, e):
        v = e.value
        if e.type == AttrType.FLOAT and v is not None:
            v = javamath.f32(v)
        src = _literal(v)
        return Compiled(src, src, e.type, {}, nullable=v is None, simple=True)

    def _TimeConstant(self, e):
        return Compiled(str(e.millis), str(e.millis), AttrType.LONG, {}, False, True)

    def _Variable(self, e):
        src, t = self.scope.resolve(e)
        return Compiled(src, src, e.rtype or t, {}, nullable=True, simple=True)

    def _SourceRef(self, e):
        return Compiled(e.source, e.source, e.type, {}, e.nullable, True)

    # -- operators --
    def _BinaryOp(self, e):
        a, b = self.gen(e.left), self.gen(e.right)
        t = e.rtype  # a typed plan: the compiler's type; else derive and check it here
        if t is None:
            for side in (a, b):
                if side.type not in rules.NUM_RANK:
                    raise TypeMismatchError(f"'{e.op}' needs numbers, not {side.type}", e.span)
            t = rules.widest_of([a.type, b.type])
        if t == AttrType.FLOAT:  # long/int operands become floats first (Java)
            a, b = self._promote(a, t), self._promote(b, t)
        g = {**a.globals, **b.globals}
        op = e.op
        if op in "+-*":
            fast = self._arith(f"({a.fast} {op} {b.fast})", t)
            if a.nullable or b.nullable:
                x = self._bind(a) if a.nullable else (a.source, a.source)
                y = self._bind(b) if b.nullable else (b.source, b.source)
                checks = " or ".join(f"{s[0]} is None" for s, c in ((x, a), (y, b)) if c.nullable)
                safe = f"(None if {checks} else {self._arith(f'({x[1]} {op} {y[1]})', t)})"
            else:
                safe = self._arith(f"({a.source} {op} {b.source})", t)
            g.update(HELPERS)
            return Compiled(safe, fast, t, g, a.nullable or b.nullable)
        helper = {
            ("/", AttrType.INT): "_idiv32",
            ("/", AttrType.LONG): "_idiv64",
            ("%", AttrType.INT): "_imod",
            ("%", AttrType.LONG): "_imod",
        }.get((op, t), "_ddiv" if op == "/" else "_dmod")
        safe = f"{helper}({a.source}, {b.source})"
        if t == AttrType.FLOAT:
            safe = f"_f32({safe})"
        fast = safe
        if op == "/" and t == AttrType.DOUBLE:
            fast = f"({a.fast} / {b.fast})"  # raises ZeroDivisionError / TypeError
        g.update(HELPERS)
        return Compiled(safe, fast, t, g, True)

    @staticmethod
    def _promote(c, t):
        """Java's promotion of an int/long operand to `t`: to float, one rounding to 32 bits;
        a long to double (Python compares an int and a float exactly, Java rounds first)."""
        if (
            c.type not in _INTEGRAL
            or t not in (AttrType.FLOAT, AttrType.DOUBLE)
            or (t == AttrType.DOUBLE and c.type == AttrType.INT)
        ):
            return c
        helper = "_i2f" if t == AttrType.FLOAT else "_l2d"
        if c.simple and not c.nullable and c.source.lstrip("-").isdigit():  # a literal
            v = repr(HELPERS[helper](int(c.source)))
            return Compiled(v, v, t, c.globals, False, True)
        fast = f"float({c.fast})" if helper == "_l2d" else f"{helper}({c.fast})"  # None raises
        return Compiled(f"{helper}({c.source})", fast, t, {**c.globals, **HELPERS}, c.nullable)

    @staticmethod
    def _arith(src, t):
        if t == AttrType.INT:
            return f"((({src} + 2147483648) & 4294967295) - 2147483648)"
        if t == AttrType.LONG:
            return f"((({src} + 9223372036854775808) & 18446744073709551615) - 9223372036854775808)"
        if t == AttrType.FLOAT:
            return f"_f32({src})"
        return src

    @staticmethod
    def _bind(c):
        """(first use, second use) of `c`: a walrus binding unless it is cheap to repeat."""
        if c.simple:
            return c.source, c.source
        name = f"_t{next(_tmp_ids)}"
        return f"({name} := {c.source})", name

    def _CompareOp(self, e):
        a, b = self.gen(e.left), self.gen(e.right)
        if e.rtype is None:  # untyped (a hand-made model): check here
            self._check_comparable(a.type, b.type, e)
        if a.type in rules.NUM_RANK and b.type in rules.NUM_RANK:
            t = rules.widest_of([a.type, b.type])
            a, b = self._promote_compared(a, b, t), self._promote_compared(b, a, t)
        g = {**a.globals, **b.globals}
        op = e.op
        if not (a.nullable or b.nullable):
            src = f"({a.source} {op} {b.source})"
            return Compiled(src, f"({a.fast} {op} {b.fast})", AttrType.BOOL, g, False)
        x, y = self._bind(a), self._bind(b)
        first = [x[0] if not a.nullable else x[1], y[0] if not b.nullable else y[1]]
        if op == "!=":  # Siddhi 3.2: `!=` with a null operand is true
            checks = [f"{s[0]} is None" for s, c in ((x, a), (y, b)) if c.nullable]
            safe = f"({' or '.join(checks)} or {first[0]} != {first[1]})"
        else:  # every other comparison with a null operand is false
            checks = [f"{s[0]} is not None" for s, c in ((x, a), (y, b)) if c.nullable]
            safe = f"({' and '.join(checks)} and {first[0]} {op} {first[1]})"
        if op in ("<", "<=", ">", ">="):
            fast = f"({a.fast} {op} {b.fast})"
        elif op in ("==", "!=") and (not a.nullable or not b.nullable):
            fast = f"({a.fast} {op} {b.fast})"  # None == value is False, None != value True
        else:
            fast = safe
        return Compiled(safe, fast, AttrType.BOOL, g, False)

    def _promote_compared(self, c, other, t):
        """Promote `c` for a comparison in type `t`, unless `other` is a literal small enough
        that the exact comparison gives the same answer (the common `x > 100.0`)."""
        limit = 16777216 if t == AttrType.FLOAT else 9007199254740992
        try:
            small = other.simple and not other.nullable and abs(float(other.source)) < limit
        except ValueError:
            small = False
        return c if small else self._promote(c, t)

    @staticmethod
    def _check_comparable(ta, tb, e):
        num = rules.NUM_RANK
        if ta == AttrType.OBJECT or tb == AttrType.OBJECT:
            return
        if (ta in num) != (tb in num) or (ta not in num and ta != tb):
            raise TypeMismatchError(f"{ta} cannot be compared with {tb}", e.span)
        if e.op not in ("==", "!=") and ta == AttrType.BOOL:
            raise TypeMismatchError(f"bool values cannot be ordered with '{e.op}'", e.span)

    def _bool_operand(self, e, what, typed=False):
        c = self.gen(e)
        if not typed and c.type not in (AttrType.BOOL, AttrType.OBJECT):
            raise TypeMismatchError(
                f"'{what}' needs a bool operand, not {c.type}", getattr(e, "span", None)
            )
        return c

    def _And(self, e):
        return self._logical(e, "and")

    def _Or(self, e):
        return self._logical(e, "or")

    def _logical(self, e, op):
        """Siddhi 3.2's two-valued logic: a null operand counts as false and the result is
        never null (`null or x` is x, `null and x` is false)."""
        typed = e.rtype is not None
        a, b = self._bool_operand(e.left, op, typed), self._bool_operand(e.right, op, typed)
        safe, fast = f"({a.source} {op} {b.source})", f"({a.fast} {op} {b.fast})"
        if a.nullable or b.nullable:
            safe, fast = f"(True if {safe} else False)", f"(True if {fast} else False)"
        return Compiled(safe, fast, AttrType.BOOL, {**a.globals, **b.globals}, False)

    def _Not(self, e):
        a = self._bool_operand(e.operand, "not", e.rtype is not None)
        return Compiled(f"(not {a.source})", f"(not {a.fast})", AttrType.BOOL, a.globals, False)

    def _Negate(self, e):
        a = self.gen(e.operand)
        if e.rtype is None and a.type not in rules.NUM_RANK:
            raise TypeMismatchError(f"'-' needs a number, not {a.type}", e.span)
        inner = self._arith(f"(-{a.source})", a.type)
        safe = f"(None if {a.source} is None else {inner})" if a.nullable else inner
        return Compiled(
            safe, self._arith(f"(-{a.fast})", a.type), a.type, {**a.globals, **HELPERS}, a.nullable
        )

    def _IsNull(self, e):
        a = self.gen(e.operand)
        src = f"({a.source} is None)"
        return Compiled(src, src, AttrType.BOOL, a.globals, False)

    def _IsNullStream(self, e):
        hook = getattr(self.scope, "compile_is_null_stream", None)
        if hook is None:
            raise EngineError(f"'{e.stream} is null' needs a pattern or join input")
        return hook(e, self)

    def _InTable(self, e):
        # the table compiles `condition in Table` (cep/engine/table/conditions.py): the
        # expression compiler knows no table code, so the table package may build on it
        table = self.scope.tables.get(e.table)
        if table is None:
            raise UnknownStreamError(
                f"'in {e.table}': no table named '{e.table}' is defined", e.span
            )
        return table.compile_in(e, self, self.scope)

    def _FunctionCall(self, e):
        typed = e.entry is not None and e.entry[0] in ("function", "script")
        entry = _typed_entry(e) if typed else self._function_entry(e)
        args = [self.gen(a) for a in e.args]
        types = [a.type for a in args]
        rt = e.rtype if typed else entry.rule(types, e)  # a typed plan: resolved already
        g = {}
        for a in args:
            g.update(a.globals)
        safe, extra = entry.emit([a.source for a in args], types, e.args)
        fast, _ = entry.emit([a.fast for a in args], types, e.args)
        g.update(extra)
        return Compiled(safe, fast, rt, g, True)

    @staticmethod
    def _function_entry(e):
        """Resolve and check a call of an untyped (hand-made) model."""
        entry = (
            ext.find_function(e.name, e.namespace)
            or ext_processors.lookup_function(e.namespace, e.name)
            or (None if e.namespace else scripts.lookup(e.name))
        )
        if entry is None:
            if aggregators.lookup(e.name, e.namespace) is not None:
                raise TypeMismatchError(
                    f"aggregator {e.name}() can only be used in a select clause", e.span
                )
            raise ext.unknown_function_error(e.name, e.namespace, e.span)
        if e.namespace:
            ext.check_arity(entry, e, e.namespace)
        else:
            rules.check_arity(entry, e)
        return entry


def _typed_entry(e):
    """The catalog entry a typed call was resolved to (built-in, extension or script)."""
    kind, namespace, name = e.entry
    if kind == "script":
        found = scripts.lookup(name)
        if found is None:
            raise UnknownFunctionError(
                f"script function {name}() is not defined in this plan", e.span
            )
        return found
    return ext.find_function(name, namespace) or ext_processors.lookup_function(namespace, name)


# -- constant folding: generated code never operates on two literals (`0.5 <= 100.125`,
# `1 is None`), which Python may warn about (SyntaxWarning) --

_FOLDABLE = (BinaryOp, CompareOp, And, Or, Not, Negate, IsNull, FunctionCall)


def _literal_tree(e):
    """Whether `e` is made of literals, operators and pure functions only."""
    if isinstance(e, (Constant, TimeConstant)):
        return True
    if isinstance(e, (BinaryOp, CompareOp, And, Or)):
        return _literal_tree(e.left) and _literal_tree(e.right)
    if isinstance(e, (Not, Negate, IsNull)):
        return _literal_tree(e.operand)
    if isinstance(e, FunctionCall):
        entry = ext.find_function(e.name, e.namespace)
        return entry is not None and entry.pure and all(map(_literal_tree, e.args))
    return False


def _literal(v):
    """Python source of a constant value (non-finite floats have no literal)."""
    if isinstance(v, float) and (v != v or v in (math.inf, -math.inf)):
        return f"float('{v}')"
    return repr(v)


def _fold(c):
    """The value of a literal-only expression, computed once, as a literal."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            v = eval(compile(c.source, "<cep:fold>", "eval"), dict(c.globals))
    except Exception:  # leave it to run time, where the usual fallbacks apply
        return c
    src = _literal(v)
    return Compiled(src, src, c.type, {}, nullable=v is None, simple=True)


# -- helpers that compose whole-batch functions --


def make_function(name, source, globals_):
    """exec `source` (which defines `name`) with `globals_`; return the function."""
    ns = dict(globals_)
    code = compile(source, f"<cep:{name}>", "exec")
    exec(code, ns)
    return ns[name]


def compile_filter(expr, scope, env=None, resets=False):
    """A `keep(batch) -> batch` function for a filter condition (events keep their kind).
    With `resets`, RESET events (row None) pass through untouched."""
    c = compile_expression(expr, scope)
    if c.type not in (AttrType.BOOL, AttrType.OBJECT):
        raise TypeMismatchError(
            f"a filter must be a bool expression, not {c.type}", getattr(expr, "span", None)
        )
    g = {**c.globals, **(env or {}), "FALLBACK": FALLBACK_ERRORS}
    pre = "k == 2 or " if resets else ""
    src = (
        "def keep(batch):\n"
        "    try:\n"
        f"        return [(ts, r, k) for ts, r, k in batch if {pre}{c.fast}]\n"
        "    except FALLBACK:\n"
        f"        return [(ts, r, k) for ts, r, k in batch if {pre}{c.source}]\n"
    )
    return make_function("keep", src, g)


def compile_projection(exprs, scope, env=None):
    """A `project(batch) -> batch` function building output rows from `exprs`."""
    cs = [compile_expression(x, scope) for x in exprs]
    g = {"FALLBACK": FALLBACK_ERRORS}
    for c in cs:
        g.update(c.globals)
    g.update(env or {})
    fast = ", ".join(c.fast for c in cs) + ("," if len(cs) == 1 else "")
    safe = ", ".join(c.source for c in cs) + ("," if len(cs) == 1 else "")
    src = (
        "def project(batch):\n"
        "    try:\n"
        f"        return [(ts, ({fast}), k) for ts, r, k in batch]\n"
        "    except FALLBACK:\n"
        f"        return [(ts, ({safe}), k) for ts, r, k in batch]\n"
    )
    return make_function("project", src, g), [c.type for c in cs]
