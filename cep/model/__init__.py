"""The SiddhiQL query model (Siddhi's `siddhi-query-api`): frozen dataclasses, no behaviour.

The compiler (cep.compiler) builds it from text; the engine (cep.engine) and the manager's query
plan builder read it and never look at text. Every node that came from source carries a `span`.
"""

from cep.model.types import AttrType, TYPES, NUMERIC_TYPES
from cep.model.span import Span, NO_SPAN
from cep.model.annotations import Annotation, find_annotation
from cep.model.expressions import (
    Expression,
    Constant,
    Variable,
    TimeConstant,
    BinaryOp,
    CompareOp,
    And,
    Or,
    Not,
    Negate,
    IsNull,
    IsNullStream,
    FunctionCall,
    InTable,
)
from cep.model.definitions import (  # noqa: F401
    Attribute,
    FunctionDefinition,
    StreamDefinition,
    TableDefinition,
    TriggerDefinition,
    WindowDefinition,
)
from cep.model.inputs import (
    Filter,
    Window,
    StreamFunction,
    SingleInputStream,
    JoinInputStream,
    StateInputStream,
    StreamState,
    NextState,
    EveryState,
    LogicalState,
    CountState,
    AbsentState,
    InputStream,
    StateElement,
)
from cep.model.queries import (
    OutputAttribute,
    OrderByAttribute,
    Selector,
    InsertInto,
    DeleteFrom,
    UpdateTable,
    UpdateOrInsert,
    OutputRate,
    Query,
    ValuePartitionKey,
    RangePartitionKey,
    RangeCondition,
    Partition,
    ExecutionPlan,
)
