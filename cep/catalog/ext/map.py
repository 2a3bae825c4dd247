"""`map:` — Siddhi 3.2.15's map extension: a map value (Java's HashMap: its iteration order and
its `{k=v, ...}` string form), built from key/value pairs, JSON (org.json's lenient reading)
or XML (lxml), read and changed with get/put/remove, written as JSON or XML."""

import re
import struct

from cep.catalog.ext import register
from cep.catalog.ext.support import ANY, BOOL, OBJECT, STRING, entry, fail, signature
from cep.engine import javamath

NS = "map"


def java_hash(x) -> int:
    """hashCode() of a key as Java computes it (String, Integer, Long, Double, Boolean; a
    null key hashes to 0 in a HashMap)."""
    if x is None:
        return 0
    if isinstance(x, str):
        h = 0
        for c in x:
            h = (31 * h + ord(c)) & 0xFFFFFFFF
        return h
    if isinstance(x, bool):
        return 1231 if x else 1237
    if isinstance(x, int):
        if -(2**31) <= x < 2**31:
            return x & 0xFFFFFFFF
        x &= 0xFFFFFFFFFFFFFFFF
        return (x ^ (x >> 32)) & 0xFFFFFFFF
    if isinstance(x, float):
        bits = struct.unpack(">q", struct.pack(">d", x))[0] & 0xFFFFFFFFFFFFFFFF
        return (bits ^ (bits >> 32)) & 0xFFFFFFFF
    return hash(x) & 0xFFFFFFFF


def _jkey(k):
    """A key as Java's equals() tells keys apart: Integer 0, Double 0.0, Double -0.0 and
    Boolean are all different keys (Python's 0 == 0.0 == -0.0 == False)."""
    if k is None:
        return ("n",)
    if isinstance(k, bool):
        return ("b", k)
    if isinstance(k, int):
        return ("i", k)
    if isinstance(k, float):
        return ("f", struct.pack(">d", k) if k == k else b"nan")
    if isinstance(k, str):
        return ("s", k)
    return ("o", k)


class JavaMap:
    """A java.util.HashMap: iteration follows its bucket order (hash spread, table size
    doubling past a 0.75 load), so toString, toJSON and toXML print what Siddhi prints."""

    __slots__ = ("data", "capacity", "_order", "_next")

    def __init__(self):
        # Java key -> (key, value, insertion number)
        self.data, self.capacity, self._order, self._next = {}, 16, None, 0

    def put(self, key, value):
        jk = _jkey(key)
        old = self.data.get(jk)
        if old is None:
            if len(self.data) + 1 > self.capacity * 0.75:
                self.capacity *= 2
            self._order = None
            self.data[jk] = (key, value, self._next)
            self._next += 1
            return None
        self.data[jk] = (old[0], value, old[2])
        return old[1]

    def get(self, key):
        found = self.data.get(_jkey(key))
        return None if found is None else found[1]

    def remove(self, key):
        found = self.data.pop(_jkey(key), None)
        if found is None:
            return None
        self._order = None
        return found[1]

    def keys(self):
        return [k for k, _ in self.items()]

    def items(self):
        if self._order is None:

            def bucket(entry):
                h = java_hash(entry[0])
                return ((h ^ (h >> 16)) & (self.capacity - 1), entry[2])

            self._order = sorted(self.data.values(), key=bucket)
        return [(k, v) for k, v, _ in self._order]

    def __len__(self):
        return len(self.data)

    def __eq__(self, other):
        return isinstance(other, JavaMap) and {k: v[1] for k, v in self.data.items()} == {
            k: v[1] for k, v in other.data.items()
        }

    def __hash__(self):  # Java hashes a map by its content (a group-by key may be a map)
        return hash(self.java_str())

    def java_str(self) -> str:
        return "{" + ", ".join(f"{_str(k, self)}={_str(v, self)}" for k, v in self.items()) + "}"

    __str__ = java_str

    def __repr__(self):
        return f"JavaMap({self.java_str()})"


def _str(x, owner=None):
    if x is owner and owner is not None:
        return "(this Map)"
    if isinstance(x, JavaMap):
        return x.java_str()
    if x is None:
        return "null"
    return javamath.java_str(x)


# -- create / get / put / remove / isMap --
def _create_rule(types, call):
    if len(types) % 2:
        fail(
            call,
            f"map:create() takes 0 or an even number of arguments (key, value pairs), "
            f"not {len(types)} (invalid number of arguments)",
        )
    return OBJECT


def _create(*kv):
    m = JavaMap()
    for i in range(0, len(kv), 2):
        m.put(kv[i], kv[i + 1])
    return m


def _as_map(m):
    if not isinstance(m, JavaMap):
        raise TypeError("first argument value must be a map")
    return m


def _get(m, key):
    return _as_map(m).get(key)


def _put(m, key, value):
    if m is None:
        raise ValueError("data can not be null")
    _as_map(m).put(key, value)
    return m


def _remove(m, key):
    _as_map(m).remove(key)
    return m


def _is_map(x):
    return isinstance(x, JavaMap)


# -- JSON (org.json's JSONObject: unquoted keys and values, single quotes) --
class JSONNull:
    """org.json's JSONObject.NULL: a JSON null kept as a map value, printed 'null'."""

    def __str__(self):
        return "null"

    java_str = __str__

    def __repr__(self):
        return "JSONNull"

    def __eq__(self, other):
        return isinstance(other, JSONNull) or other is None

    def __hash__(self):
        return 0


JSON_NULL = JSONNull()


class JSONArray:
    """org.json's JSONArray as a map value: its string form is its JSON text."""

    __slots__ = ("items",)

    def __init__(self, items):
        self.items = items

    def __eq__(self, other):
        return isinstance(other, JSONArray) and self.items == other.items

    def __hash__(self):
        return hash(str(self))

    def __str__(self):
        return "[" + ",".join(_json_value(x) for x in self.items) + "]"

    java_str = __str__

    def __repr__(self):
        return f"JSONArray({self})"


class _JSONReader:
    def __init__(self, text):
        self.s, self.i = text, 0

    def error(self, what):
        raise ValueError(f"{what} at {self.i} [character {self.i + 1}]")

    def next_clean(self):
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c == "/" and s[self.i : self.i + 2] == "//":
                self.i = s.find("\n", self.i) % (len(s) + 1) or len(s)
            elif c == "#":
                self.i = s.find("\n", self.i) % (len(s) + 1) or len(s)
            elif c > " ":
                self.i += 1
                return c
            else:
                self.i += 1
        return ""

    def object(self):
        if self.next_clean() != "{":
            self.error("A JSONObject text must begin with '{'")
        m = JavaMap()
        while True:
            c = self.next_clean()
            if c == "":
                self.error("A JSONObject text must end with '}'")
            if c == "}":
                return m
            self.i -= 1
            key = self.value()
            if self.next_clean() != ":":
                self.error("Expected a ':' after a key")
            m.put(_str(key) if not isinstance(key, str) else key, self.value())
            c = self.next_clean()
            if c in ";,":
                if self.next_clean() == "}":
                    self.error("Expected a key before '}'")
                self.i -= 1
            elif c == "}":
                return m
            else:
                self.error("Expected a ',' or '}'")

    def array(self):
        out = []
        if self.next_clean() == "]":
            return out
        self.i -= 1
        while True:
            if self.next_clean() == ",":
                out.append(None)
            else:
                self.i -= 1
                out.append(self.value())
            c = self.next_clean()
            if c == ",":
                if self.next_clean() == "]":
                    return out
                self.i -= 1
            elif c == "]":
                return out
            else:
                self.error("Expected a ',' or ']'")

    def value(self):
        c = self.next_clean()
        if c in "\"'":
            return self.string(c)
        if c == "{":
            self.i -= 1
            return self.object()
        if c == "[":
            return JSONArray(self.array())
        start = self.i - 1
        stops = ',:]}/\\"[{;=#'
        while self.i < len(self.s) and self.s[self.i] >= " " and self.s[self.i] not in stops:
            self.i += 1
        text = self.s[start : self.i].strip()
        if text == "":
            self.error("Missing value")
        return _json_literal(text)

    def string(self, quote):
        out = []
        while True:
            if self.i >= len(self.s):
                self.error("Unterminated string")
            c = self.s[self.i]
            self.i += 1
            if c in "\n\r":
                self.error("Unterminated string")
            if c == "\\":
                e = self.s[self.i]
                self.i += 1
                if e == "u":
                    out.append(chr(int(self.s[self.i : self.i + 4], 16)))
                    self.i += 4
                else:
                    out.append({"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r"}.get(e, e))
            elif c == quote:
                return "".join(out)
            else:
                out.append(c)


def _json_literal(text):
    """JSONObject.stringToValue: true/false/null, an int/long/double, else the string."""
    low = text.lower()
    if low == "true":
        return True
    if low == "false":
        return False
    if low == "null":
        return JSON_NULL
    if text[0].isdigit() or text[0] in "-.":
        try:
            if any(c in text for c in ".eE") or text == "-0":
                v = float(text)
            else:
                v = int(text)
                if not -(2**63) <= v < 2**63:
                    v = float(text)  # org.json falls back to a double
        except ValueError:
            return text
        if isinstance(v, float) and (v != v or v in (float("inf"), float("-inf"))):
            raise ValueError("JSON does not allow non-finite numbers")
        return v
    return text


def _create_from_json(text):
    if not isinstance(text, str):
        raise TypeError("data should be a string")
    return _JSONReader(text).object()


def _json_number(v):
    """JSONObject.numberToString: a double without trailing zeros ('100' for 100.0)."""
    if isinstance(v, float):
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError("JSON does not allow non-finite numbers")
        s = javamath.java_double_str(v)
        if "." in s and "e" not in s.lower():
            s = s.rstrip("0").rstrip(".")
        return s
    return str(v)


def _json_quote(s):
    out, prev = ['"'], ""
    for c in s:
        if c in '\\"':
            out.append("\\" + c)
        elif c == "/":
            out.append("\\/" if prev == "<" else "/")
        elif c in "\b\t\n\f\r":
            out.append({"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}[c])
        elif c < " " or "\u0080" <= c < "\u00a0" or "\u2000" <= c < "\u2100":
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(c)
        prev = c
    out.append('"')
    return "".join(out)


def _json_value(v):
    if v is None or isinstance(v, JSONNull):
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return _json_number(v)
    if isinstance(v, JavaMap):
        return _to_json(v)
    if isinstance(v, JSONArray):
        return str(v)
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_json_value(x) for x in v) + "]"
    return _json_quote(_str(v))


def _to_json(m):
    _as_map(m)
    if any(k is None for k in m.keys()):
        raise ValueError("JSON object keys cannot be null")
    return "{" + ",".join(f"{_json_quote(_str(k))}:{_json_value(v)}" for k, v in m.items()) + "}"


# -- XML --
# commons-lang3 NumberUtils.isCreatable: hex, or a decimal with an optional exponent and type
# suffix (l/L only on an integer)
_CREATABLE = re.compile(
    r"[-+]?(?:0[xX][0-9a-fA-F]+|#[0-9a-fA-F]+|"
    r"(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?[fFdD]?|\d+[lL])"
)
# DecimalFormat.parse (en-US): the longest number prefix, with grouping and an 'E' exponent
_DECIMAL_PREFIX = re.compile(r"-?(?:\d[\d,]*)?(?:\.\d*)?(?:E[-+]?\d+)?")


def _xml_value(text):
    """createFromXML's reading of a leaf: 'true'/'false' as a bool; text that
    NumberUtils.isNumber accepts as NumberFormat.parse reads its prefix (a long when the
    value is integral, else a double); any other text as it is."""
    if text is None:
        return None
    if text in ("true", "false"):
        return text == "true"
    if not _CREATABLE.fullmatch(text):
        return text
    m = _DECIMAL_PREFIX.match(text)
    digits = m.group(0).replace(",", "") if m else ""
    if not any(c.isdigit() for c in digits.split("E")[0]):
        raise ValueError(f"Unparseable number: {text!r}")
    v = float(digits)
    if v.is_integer() and abs(v) < 2**63 and not (v == 0 and digits.startswith("-")):
        return int(v)
    return v


def _xml_to_map(element):
    m = JavaMap()
    for child in element:
        if not isinstance(child.tag, str):
            continue  # comments, processing instructions
        key = child.tag  # lxml spells a namespaced name '{uri}local', as QName.toString does
        if len(child):
            m.put(key, _xml_to_map(child))
        else:
            m.put(key, _xml_value(child.text if child.text is not None else ""))
    return m


def _create_from_xml(text):
    from lxml import etree

    if not isinstance(text, str):
        raise TypeError("data should be a string")
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)
    root = etree.fromstring(text.encode("utf-8"), parser)
    return _xml_to_map(root)


def _xml_body(m):
    out = []
    for k, v in m.items():
        out.append(f"<{_str(k)}>")
        out.append(_xml_body(v) if isinstance(v, JavaMap) else _str(v))
        out.append(f"</{_str(k)}>")
    return "".join(out)


def _to_xml_rule(types, call):
    if len(types) == 2 and types[1] is not STRING:
        fail(
            call,
            f"map:toXML() root element name must be a string, not {types[1].value} "
            f"(invalid parameter type)",
            1,
        )
    return STRING


def _to_xml_factory(types, args):
    if len(types) == 1:
        return lambda m: _xml_body(_as_map(m))

    def to_xml(m, root):
        body = _xml_body(_as_map(m))
        return body if root is None else f"<{root}>{body}</{root}>"

    return to_xml


register(
    NS,
    [
        entry(
            NS,
            "create",
            0,
            None,
            _create_rule,
            _create,
            "create(k1, v1, k2, v2, ...): a map of the pairs",
            pure=False,
        ),
        entry(
            NS,
            "createFromJSON",
            1,
            1,
            signature("map:createFromJSON", OBJECT, ANY),
            _create_from_json,
            "createFromJSON(string): a map of a JSON object (lenient)",
            pure=False,
        ),
        entry(
            NS,
            "createFromXML",
            1,
            1,
            signature("map:createFromXML", OBJECT, ANY),
            _create_from_xml,
            "createFromXML(string): a map of the root element's children",
            pure=False,
        ),
        entry(
            NS,
            "get",
            2,
            2,
            signature("map:get", OBJECT, ANY, ANY),
            _get,
            "get(map, key): the value, null when absent",
        ),
        entry(
            NS,
            "put",
            3,
            3,
            signature("map:put", OBJECT, ANY, ANY, ANY),
            _put,
            "put(map, key, value): the same map, changed",
            pure=False,
        ),
        entry(
            NS,
            "remove",
            2,
            2,
            signature("map:remove", OBJECT, ANY, ANY),
            _remove,
            "remove(map, key): the same map, changed",
            pure=False,
        ),
        entry(
            NS,
            "isMap",
            1,
            1,
            signature("map:isMap", BOOL, ANY),
            _is_map,
            "isMap(value): whether it is a map",
            boolean=True,
        ),
        entry(
            NS,
            "toJSON",
            1,
            1,
            signature("map:toJSON", STRING, ANY),
            _to_json,
            "toJSON(map): the map as JSON (org.json's form)",
        ),
        entry(
            NS,
            "toXML",
            1,
            2,
            _to_xml_rule,
            _to_xml_factory,
            "toXML(map[, rootElement]): <key>value</key> elements",
            factory=True,
        ),
    ],
)
