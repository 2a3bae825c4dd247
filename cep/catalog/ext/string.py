"""`str:` — Siddhi 3.2.15's string extension (19 functions), with the Java originals' argument
types, result types and failures (a Java exception gives null, see `support.guarded`)."""

from cep.catalog.ext import register
from cep.catalog.ext.support import (
    ANY,
    BOOL,
    INT,
    STRING,
    check_types,
    entry,
    java_length,
    java_regex,
    java_replacement,
    java_split,
    signature,
    to_java_string,
)

NS = "str"
_JAVA_SPACE = "".join(map(chr, range(33)))  # String.trim() strips every char <= ' '


def _need(*values):
    for i, v in enumerate(values):
        if v is None:
            raise ValueError(f"argument {i + 1} cannot be null")


def _char_at(s, i):
    _need(s, i)
    if i < 0 or i >= len(s):
        raise IndexError(f"index {i} is negative or not less than the length of the string")
    return s[i]


def _coalesce(*xs):
    for x in xs:
        if x is not None:
            return x
    return None


def _concat_factory(types, args):
    conv = [(lambda v, t=t: to_java_string(v, t)) for t in types]

    def concat(*xs):
        return "".join(c(x) for c, x in zip(conv, xs) if x is not None)

    if all(t is STRING for t in types):
        return lambda *xs: "".join(x for x in xs if x is not None)
    return concat


def _contains(s, sub):
    if s is None:
        return False
    _need(sub)
    return sub in s


def _equals_ignore_case(a, b):
    _need(a)
    return (
        b is not None
        and len(a) == len(b)
        and (a == b or a.upper() == b.upper() or a.lower() == b.lower())
    )


def _hex(s):
    _need(s)
    return "".join(format(ord(c), "x") for c in s)


def _unhex(s):
    _need(s)
    return "".join(chr(int(s[i : i + 2], 16)) for i in range(0, len(s), 2))


def _length(s):
    _need(s)
    return java_length(s)


def _lower(s):
    _need(s)
    return s.lower()


def _upper(s):
    _need(s)
    return s.upper()


def _reverse(s):
    _need(s)
    return s[::-1]


def _trim(s):
    _need(s)
    return s.strip(_JAVA_SPACE)


def _regexp_factory(types, args):
    def regexp(s, regex):
        _need(s, regex)
        return java_regex(regex).fullmatch(s) is not None

    return regexp


def _repeat(s, n):
    _need(s, n)
    return s * n if n > 0 else ""


def _replace_all(s, regex, repl):
    _need(s, regex, repl)
    return java_regex(regex).sub(java_replacement(repl), s)


def _replace_first(s, regex, repl):
    _need(s, regex, repl)
    return java_regex(regex).sub(java_replacement(repl), s, count=1)


def _split(s, regex, group):
    _need(s, regex, group)
    parts = java_split(s, regex)
    if group < 0:
        raise IndexError(group)
    return parts[group]


def _strcmp(a, b):
    _need(a, b)
    if a.isascii() and b.isascii():
        for x, y in zip(a, b):
            if x != y:
                return ord(x) - ord(y)
        return len(a) - len(b)
    ua, ub = a.encode("utf-16-be"), b.encode("utf-16-be")
    for k in range(0, min(len(ua), len(ub)), 2):
        x, y = ua[k] << 8 | ua[k + 1], ub[k] << 8 | ub[k + 1]
        if x != y:
            return x - y
    return (len(ua) - len(ub)) // 2


def _substring(s, begin, end=None):
    """String.substring's bounds: an exception (so null) where Java throws."""
    n = len(s)
    end = n if end is None else end
    if begin < 0 or end > n or begin > end:
        raise IndexError(f"begin {begin}, end {end}, length {n}")
    return s[begin:end]


def _substr_rule(types, call):
    full = "str:substr"
    check_types(full, call, types[:1], [(STRING,)])
    if len(types) == 2:
        check_types(full, call, types, [None, (INT, STRING)])
    else:
        check_types(full, call, types, [None, (INT, STRING), (INT,)])
    return STRING


def _substr_factory(types, args):
    if types[1] is INT:
        if len(types) == 2:

            def substr(s, begin):
                _need(s, begin)
                return _substring(s, begin)
        else:

            def substr(s, begin, length):
                _need(s, begin, length)
                return _substring(s, begin, begin + length)

        return substr
    if len(types) == 2:

        def substr(s, regex):
            _need(s, regex)
            m = java_regex(regex).search(s)
            return m.group(0) if m else ""
    else:

        def substr(s, regex, group):
            _need(s, regex, group)
            m = java_regex(regex).search(s)
            return m.group(group) if m else ""

    return substr


def _coalesce_rule(types, call):
    check_types("str:coalesce", call, types, [(types[0],)] * len(types))
    return types[0]


S = (STRING,)
register(
    NS,
    [
        entry(
            NS,
            "charAt",
            2,
            2,
            signature("str:charAt", STRING, S, (INT,)),
            _char_at,
            "charAt(string, int index): the character at index",
        ),
        entry(
            NS,
            "coalesce",
            1,
            None,
            _coalesce_rule,
            _coalesce,
            "coalesce(a, b, ...): the first non-null argument (all of one type)",
        ),
        entry(
            NS,
            "concat",
            2,
            None,
            signature("str:concat", STRING, ANY, ...),
            _concat_factory,
            "concat(a, b, ...): the arguments' string forms, nulls left out",
            factory=True,
        ),
        entry(
            NS,
            "contains",
            2,
            2,
            signature("str:contains", BOOL, S, S),
            _contains,
            "contains(string, sub): false for a null string",
            boolean=True,
        ),
        entry(
            NS,
            "equalsIgnoreCase",
            2,
            2,
            signature("str:equalsIgnoreCase", BOOL, S, S),
            _equals_ignore_case,
            "equalsIgnoreCase(a, b)",
            boolean=True,
        ),
        entry(
            NS,
            "hex",
            1,
            1,
            signature("str:hex", STRING, S),
            _hex,
            "hex(string): each character's code in hexadecimal",
        ),
        entry(
            NS,
            "unhex",
            1,
            1,
            signature("str:unhex", STRING, S),
            _unhex,
            "unhex(string): the characters of hexadecimal pairs",
        ),
        entry(
            NS,
            "length",
            1,
            1,
            signature("str:length", INT, S),
            _length,
            "length(string): UTF-16 length",
        ),
        entry(NS, "lower", 1, 1, signature("str:lower", STRING, S), _lower, "lower(string)"),
        entry(NS, "upper", 1, 1, signature("str:upper", STRING, S), _upper, "upper(string)"),
        entry(
            NS,
            "regexp",
            2,
            2,
            signature("str:regexp", BOOL, S, S),
            _regexp_factory,
            "regexp(string, regex): whether the whole string matches",
            factory=True,
            boolean=True,
        ),
        entry(
            NS,
            "repeat",
            2,
            2,
            signature("str:repeat", STRING, S, (INT,)),
            _repeat,
            "repeat(string, times)",
        ),
        entry(
            NS,
            "replaceAll",
            3,
            3,
            signature("str:replaceAll", STRING, S, S, S),
            _replace_all,
            "replaceAll(string, regex, replacement): Java's $n group references",
        ),
        entry(
            NS,
            "replaceFirst",
            3,
            3,
            signature("str:replaceFirst", STRING, S, S, S),
            _replace_first,
            "replaceFirst(string, regex, replacement)",
        ),
        entry(
            NS, "reverse", 1, 1, signature("str:reverse", STRING, S), _reverse, "reverse(string)"
        ),
        entry(
            NS,
            "split",
            3,
            3,
            signature("str:split", STRING, S, S, (INT,)),
            _split,
            "split(string, regex, index): the index-th piece of String.split",
        ),
        entry(
            NS,
            "strcmp",
            2,
            2,
            signature("str:strcmp", INT, S, S),
            _strcmp,
            "strcmp(a, b): String.compareTo",
        ),
        entry(
            NS,
            "substr",
            2,
            3,
            _substr_rule,
            _substr_factory,
            "substr(string, begin[, length]) or substr(string, regex[, group])",
            factory=True,
        ),
        entry(
            NS,
            "trim",
            1,
            1,
            signature("str:trim", STRING, S),
            _trim,
            "trim(string): strips characters up to U+0020",
        ),
    ],
)
