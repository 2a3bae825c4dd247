"""Write cases/enrich.yaml: a plan with two tables (a keyed one and a plain one) that queries
insert into, update, delete, update-or-insert and join against (inner and left outer joins, `in`),
random events, and the output of the real Siddhi 3.2.15 for the in-memory plan.

    PYTHONPATH=$PWD .venv/bin/python tests/cep/tables/gen_enrich_case.py ../shared/siddhi-kit

The test (test_table_backends.py) runs the same plan with the tables in memory, in SQLite and
in PostgreSQL, and compares each output with Siddhi's."""

import json
import os
import random
import subprocess
import sys
import tempfile

import yaml

PLAN = """@Plan:playback
define stream PriceIn (symbol string, price double, sector string, volume long);
define stream Fix (symbol string, price double);
define stream Upsert (symbol string, price double, sector string, volume long);
define stream Drop (symbol string);
define stream Quote (symbol string, qty int, cap double);
define stream Probe (symbol string, minVolume long);
{prices}@IndexBy('symbol')
define table Prices (symbol string, price double, sector string, volume long);
{trades}define table Trades (symbol string, qty int);
from PriceIn insert into Prices;
from Fix select symbol, price update Prices on Prices.symbol == symbol;
from Upsert insert overwrite Prices on Prices.symbol == symbol;
from Drop delete Prices on Prices.symbol == symbol;
from Quote join Prices on Quote.symbol == Prices.symbol and Prices.price * 2 > Quote.cap
select Quote.symbol as symbol, Quote.qty as qty, Prices.price as price, Prices.sector as sector
insert into Enriched;
from Probe join Prices on Prices.volume >= Probe.minVolume and not (Prices.sector == 'tech')
select Probe.symbol as probe, Prices.symbol as symbol, Prices.volume as volume
insert into Big;
from Quote left outer join Trades on Quote.symbol == Trades.symbol and Trades.qty > Quote.qty
select Quote.symbol as symbol, Quote.qty as qty, Trades.qty as bigger
insert into Bigger;
from Quote[qty > 5] select symbol, qty insert into Trades;
from Probe[(Trades.symbol == symbol and Trades.qty >= 8) in Trades]
select symbol insert into Traded;
from Drop delete Trades on Trades.qty < 3 or Trades.symbol == symbol;
"""

SYMBOLS = ["IBM", "MSFT", "ORCL", "WSO2", "GOOG", "AAPL"]
SECTORS = ["tech", "fin", "energy"]


def events(seed=7, n=240):
    rnd = random.Random(seed)
    out, ts = [], 1000
    for _ in range(n):
        ts += 10
        s = rnd.choice(SYMBOLS)
        kind = rnd.choices(
            ["PriceIn", "Fix", "Upsert", "Drop", "Quote", "Probe"], [3, 2, 2, 1, 6, 3]
        )[0]
        if kind == "PriceIn" or kind == "Upsert":
            data = [s, round(rnd.uniform(5, 50), 2), rnd.choice(SECTORS), rnd.randint(100, 10000)]
        elif kind == "Fix":
            data = [s, round(rnd.uniform(5, 50), 2)]
        elif kind == "Drop":
            data = [s]
        elif kind == "Quote":
            data = [s, rnd.randint(1, 12), round(rnd.uniform(10, 100), 1)]
        else:
            data = [s, rnd.randint(100, 10000)]
        out.append({"stream": kind, "timestamp": ts, "data": data})
    return out


def main(kit):
    plan = PLAN.format(prices="", trades="")
    evs = events()
    with tempfile.TemporaryDirectory() as d:
        pf, ef = os.path.join(d, "plan.siddhiql"), os.path.join(d, "events.jsonl")
        open(pf, "w").write(plan)
        open(ef, "w").write("".join(json.dumps(e) + "\n" for e in evs))
        run = subprocess.run(
            [os.path.join(kit, "siddhi-run"), pf, ef], check=True, capture_output=True, text=True
        )
    expect = {}
    for line in run.stdout.splitlines():
        e = json.loads(line)
        expect.setdefault(e["stream"], []).append({"timestamp": e["timestamp"], "data": e["data"]})
    case = {
        "name": "enrich",
        "siddhi": "3.2.15",
        "description": "tables written and read by joins and `in`; expected output from "
        "siddhi-run over the in-memory plan",
        "plan_template": PLAN,
        "input": evs,
        "expect": expect,
    }
    here = os.path.join(os.path.dirname(__file__), "cases", "enrich.yaml")
    with open(here, "w") as f:
        yaml.safe_dump(case, f, sort_keys=False, width=100)
    print({k: len(v) for k, v in expect.items()})


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/siddhi-kit")
