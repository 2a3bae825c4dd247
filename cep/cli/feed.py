"""Replay an event file into a worker's HTTP receiver (an event simulator): JSON lines, or a
CEP 4.0 event simulator file (eventsimulatorfiles/<name>.csv or its stream configuration
.xml)."""

import argparse
import sys
import time
import urllib.error

from receivers.simulator import Simulator, load_events


def run(args):
    if args.events.lower().endswith((".csv", ".xml")):
        return _run_cep40(args)
    events = load_events(args.events)
    if not events:
        print(f"cep feed: no events in {args.events}", file=sys.stderr)
        return 1
    sim = Simulator(
        args.worker,
        args.tenant,
        args.plan,
        events,
        rate=args.rate,
        batch=args.batch,
        keep_time=args.keep_time,
    )
    while True:
        try:
            sent, accepted = sim.run(loop=args.loop)
            break
        except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
            if not args.retry:
                print(f"cep feed: worker at {args.worker} did not answer: {exc}", file=sys.stderr)
                return 1
            time.sleep(1.0)  # the worker may still be syncing the plan
    acked = True
    if sim.senders:  # several workers: done once a checkpoint committed what was accepted
        acked = sim.acknowledge(args.ack_timeout)
        resent = sum(s.stats.resent for s in sim.senders.values())
        pending = sum(s.pending_events for s in sim.senders.values())
        print(
            f"resent {resent} to another worker after a loss; "
            + (
                "every accepted event committed"
                if acked
                else f"{pending} accepted events not committed within {args.ack_timeout:.0f} s"
            ),
            file=sys.stderr,
        )
    print(f"sent {sent}, accepted {accepted}, rejected {sim.rejected}", file=sys.stderr)
    return 0 if accepted == sent and acked else 1


def _run_cep40(args):
    from receivers.cep40_feed import FeedFileError, load_feed, pick_stream, send_feed

    try:
        feed = load_feed(args.events)
        stream = args.stream or pick_stream(args.worker, args.tenant, args.plan, feed)
        sent, accepted, reasons = send_feed(
            args.worker,
            args.tenant,
            args.plan,
            stream,
            feed,
            rate=args.rate if args.rate_given else None,
            batch=args.batch,
        )
    except FeedFileError as exc:
        print(f"cep feed: {exc}", file=sys.stderr)
        return 1
    except (urllib.error.URLError, ConnectionError, TimeoutError) as exc:
        print(f"cep feed: worker at {args.worker} did not answer: {exc}", file=sys.stderr)
        return 1
    for line, reason in reasons[:20]:
        print(f"{feed.csv_path.name}: batch from line {line}: {reason}", file=sys.stderr)
    print(
        f"{feed.stream_id} -> {args.plan}/{stream}: sent {sent}, accepted {accepted}, "
        f"rejected {sent - accepted}",
        file=sys.stderr,
    )
    return 0 if accepted == sent else 1


class _RateAction(argparse.Action):
    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        namespace.rate_given = True


def subparser_hook(subparsers):
    p = subparsers.add_parser("feed", help=__doc__, description=__doc__)
    p.add_argument("plan", help="execution plan name")
    p.add_argument(
        "events",
        help='JSON lines: {"stream", "timestamp", "data"}; or a '
        "CEP 4.0 simulator .csv (or its stream configuration .xml)",
    )
    p.add_argument(
        "--stream",
        help="the plan's stream a CEP 4.0 feed goes to (default: the "
        "one named like its streamID, or the plan's only one)",
    )
    p.add_argument(
        "--worker",
        default="http://127.0.0.1:9090",
        help="worker HTTP address; several (URL,URL...): events go to the first, "
        "and what it accepted but no checkpoint committed yet is sent to the "
        "next if it is lost",
    )
    p.add_argument(
        "--ack-timeout",
        type=float,
        default=60.0,
        help="with several workers: seconds to wait at the end for a checkpoint "
        "to commit every accepted event",
    )
    p.add_argument("--tenant", default="-1234", help="tenant id (default the super tenant)")
    p.add_argument(
        "--rate",
        type=float,
        default=20.0,
        action=_RateAction,
        help="events per second (a CEP 4.0 feed: its delayBetweenEventsInMillis unless given)",
    )
    p.add_argument("--batch", type=int, default=10, help="events per HTTP request")
    p.add_argument("--loop", action="store_true", help="replay until interrupted")
    p.add_argument(
        "--keep-time",
        action="store_true",
        help="keep the file's timestamps instead of stamping the current time",
    )
    p.add_argument(
        "--retry", action="store_true", help="keep retrying while the worker does not answer"
    )
    p.set_defaults(func=run, rate_given=False)
