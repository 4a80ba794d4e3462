"""Command line: ``icml26 list | info KEY | run KEY|all [--quick] [field=value …] | aggregate KEY | report |
cache export KIND FILE | cache import FILE``."""

from __future__ import annotations

import argparse
import errno
import json
import logging
import re
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Sequence

from icml26 import registry
from icml26.atomic import Terminated, sigterm_as_interrupt

__all__ = ["main"]


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""


#: Exit status of an internal error (a bug in icml26 or a paper's code): traceback, then 1.
EXIT_INTERNAL = 1
#: A user error (a bad argument or config value, a corrupt result): one line, 2.
EXIT_USER = 2
#: The machine refused (a full disk, a read-only or forbidden folder, out of memory): one line, 3.
EXIT_ENVIRONMENT = 3
#: Errors of the machine rather than of icml26 or of the input.
_ENVIRONMENT_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.ENOMEM,
                       errno.EMFILE, errno.ENFILE}


def _parse_overrides(items: Sequence[str]) -> dict[str, str]:
    overrides: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise CliError(f"override {item!r} must look like field=value")
        name, value = item.split("=", 1)
        if not name:
            raise CliError(f"override {item!r} has no field name")
        overrides[name.strip()] = value
    return overrides


def _cmd_list(args: argparse.Namespace) -> int:
    try:
        specs = registry.list_papers(args.area)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    rows = [("key", "area", "status", "extras")]
    for spec in specs:
        if spec.extras:
            missing = set(spec.missing_extras())
            extras = ", ".join(f"{e} ({'missing' if e in missing else 'ok'})" for e in spec.extras)
        else:
            extras = "-"
        rows.append((spec.key, spec.area, spec.status, extras))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for i, row in enumerate(rows):
        print("  ".join(c.ljust(w) for c, w in zip(row, widths)) + "  " + row[3])
        if i:
            print(" " * (widths[0] + 2) + "applies: " + specs[i - 1].applies)
    n_impl = sum(s.implemented for s in specs)
    print(f"\n{len(specs)} papers, {n_impl} implemented")
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    from icml26.info import describe

    describe(_spec(args.key), args.results)
    return 0


def _spec(key: str) -> registry.PaperSpec:
    try:
        return registry.get(key)
    except KeyError as exc:
        raise CliError(exc.args[0]) from None


def _plan(key: str, args: argparse.Namespace, overrides: dict[str, str]):
    """The run's :class:`~icml26.runner.RunPlan`, built once; everything a user can get wrong fails here."""
    from icml26.runner import RunPlan

    seeds = args.seeds if args.seeds is not None else (args.seed,)
    threads = 1 if args.seeds is not None else args.threads  # a sweep's jobs run at one thread each
    return RunPlan.build(key, setting=_setting(args), seeds=seeds, overrides=overrides, device=args.device,
                         threads=threads, out=args.out)


def _run_one(plan, args: argparse.Namespace):
    from icml26 import runner

    progress = None if not args.no_progress else False
    if args.seeds is not None:
        from icml26.sweep import sweep_plan

        done = sweep_plan(plan, workers=args.workers, backend=args.backend, address=args.address, progress=progress,
                          resume=args.resume)
        return done.aggregate
    return runner.run_plan(plan, progress=progress)


def _setting(args: argparse.Namespace) -> str:
    return "tiny" if args.tiny else ("quick" if args.quick else "full")


def _cmd_run(args: argparse.Namespace) -> int:
    from icml26.common.extras import MissingExtraError
    from icml26.common.seeding import resolve_device
    from icml26.runner import MeasuredNothingError, PaperNotImplementedError, check_out

    overrides = _parse_overrides(args.overrides)
    if args.threads is not None and args.threads < 1:
        raise CliError(f"--threads {args.threads} must be at least 1")
    if args.seed < 0:
        raise CliError(f"--seed {args.seed} must be a non-negative integer")
    if args.seeds is not None:
        from icml26.sweep import parse_seeds

        if args.seed_given:
            raise CliError("give --seed S (one seed) or --seeds 0-4 (a sweep), not both")
        try:
            args.seeds = parse_seeds(args.seeds)
        except ValueError as exc:
            raise CliError(str(exc)) from None
    if args.resume and args.seeds is None:
        raise CliError("--resume applies to a sweep (--seeds 0-4): it skips the seeds already in the folder")
    if args.workers is not None and args.workers < 1:
        raise CliError(f"--workers {args.workers} must be at least 1")
    if args.backend == "ray":
        from icml26.common.extras import extra_installed, install_hint

        if not extra_installed("ray"):
            raise CliError(f"--backend ray needs Ray; run: {install_hint('ray')}")
    elif args.address is not None:
        raise CliError("--address applies to --backend ray")
    try:
        resolve_device(args.device)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    if args.key != "all":
        spec = _spec(args.key)
        # Everything a user can get wrong is checked before any work: a ValueError here is
        # theirs (exit 2); one raised inside the run is a bug and gets a traceback (exit 1).
        try:
            plan = _plan(spec.key, args, overrides)
        except (PaperNotImplementedError, MissingExtraError, ValueError, TypeError) as exc:
            raise CliError(str(exc)) from None
        try:
            result = _run_one(plan, args)
        except (MissingExtraError, MeasuredNothingError) as exc:
            raise CliError(str(exc)) from None
        print(result.verdict())
        if result.path is not None:
            print(f"\nwrote {result.path}")
        return 0

    if overrides:
        raise CliError("field=value overrides apply to one paper; use `icml26 run KEY …`")
    if args.out is not None:
        try:
            check_out(args.out, "_probe").rmdir()
        except (ValueError, OSError) as exc:
            raise CliError(str(exc)) from None
    keys = registry.keys(status="implemented")
    if not keys:
        print("no paper is implemented yet; nothing to run")
        return 0
    if args.seeds is None and args.backend == "process":
        return _run_all_parallel(keys, args)
    summary = []
    job_start = time.perf_counter()
    for key in keys:
        print(f"=== {key}", flush=True)
        start = time.perf_counter()
        try:
            result = _run_one(_plan(key, args, {}), args)
        except Exception as exc:  # carry on past a failure, and record it
            traceback.print_exc()
            summary.append({"paper": key, "status": "failed", "error": f"{type(exc).__name__}: {exc}",
                            "wall_time_s": round(time.perf_counter() - start, 1)})
            continue
        print(result.verdict(), flush=True)
        summary.append({"paper": key, "status": "ok", "claim_passed": result.passed,
                        "wall_time_s": round(time.perf_counter() - start, 1)})
    print("\nsummary:")
    for row in summary:
        verdict = row["status"] if row["status"] != "ok" else ("held" if row["claim_passed"] else "not held")
        print(f"  {row['paper']:<16} {verdict:<10} {row['wall_time_s']:>8.1f} s  {row.get('error', '')}")
    if args.out is not None:  # the same file as the parallel path's, so that `icml26 report` reads either
        from icml26.common.seeding import default_threads
        from icml26.results import atomic_write_text
        from icml26.sweep import RunAllResult

        done = RunAllResult(summary, time.perf_counter() - job_start, args.workers or default_threads())
        atomic_write_text(Path(args.out) / "run_all.json", json.dumps(done.to_dict(), indent=1) + "\n")
    return 1 if any(r["status"] == "failed" for r in summary) else 0


def _cmd_aggregate(args: argparse.Namespace) -> int:
    """Rebuild a result's derived fields from its seeds and the paper's current declarations."""
    from icml26.results import ResultError, load_result
    from icml26.runner import render_figures, write_result
    from icml26.sweep import aggregate_folder, rederive

    spec = _spec(args.key)
    folder = Path(args.out) / spec.key / (args.run or "")
    if args.run is not None and not re.fullmatch(r"[A-Za-z0-9_.-]+", args.run):
        raise CliError(f"--run {args.run!r} must be a plain folder name")
    try:
        if (folder / "seeds").is_dir():
            data, figures = aggregate_folder(spec.key, folder, {})
        elif (folder / "result.json").is_file():
            data = rederive(spec.key, load_result(folder / "result.json"))
            figures = {name: (folder / name).read_bytes() for name in data["figures"] if (folder / name).is_file()}
            if len(figures) != len(data["figures"]):
                figures = render_figures(spec.key, data)
                data["figures"] = sorted(figures)
        else:
            raise CliError(f"{folder} holds neither seeds/ nor result.json; run `icml26 run {spec.key} --quick` first")
    except (ResultError, ValueError) as exc:
        raise CliError(str(exc)) from None
    path = write_result(folder, data, figures)
    print(f"{data['claim']['status']}: {data['claim']['reason']}")
    print(f"wrote {path}")
    return 0


def _run_all_parallel(keys: list[str], args: argparse.Namespace) -> int:
    """``run all`` with one seed: papers in parallel, the most expensive first (icml26.sweep.run_all)."""
    from icml26.results import atomic_write_text
    from icml26.sweep import run_all

    done = run_all(keys, setting=_setting(args), seed=args.seed, device=args.device, out=args.out,
                   workers=args.workers, progress=None if not args.no_progress else False)
    print(f"\nsummary ({done.wall_time_s:.0f} s wall on {done.workers} worker(s); "
          f"{sum(r['wall_time_s'] or 0 for r in done.rows):.0f} s of seed time):")
    for row in done.rows:
        verdict = row["status"] if row["status"] != "ok" else row["claim_status"]
        seconds = f"{row['wall_time_s']:>8.1f} s" if row["wall_time_s"] is not None else " " * 10
        print(f"  {row['paper']:<16} {verdict:<13} {seconds}  {row.get('error', '')}")
    if args.out is not None:
        atomic_write_text(Path(args.out) / "run_all.json", json.dumps(done.to_dict(), indent=1) + "\n")
    return 1 if done.failed else 0


def _cmd_report(args: argparse.Namespace) -> int:
    from icml26.results import ResultError, report

    results = Path(args.results)
    if not results.is_dir():
        raise CliError(f"results folder {results} does not exist; run `icml26 run … ` first")
    try:
        path = report(results, readme=args.readme, paper_readmes=args.paper_readmes)
    except ResultError as exc:
        raise CliError(f"invalid result: {exc}") from None
    print(f"wrote {path}")
    return 0


def _cmd_cache(args: argparse.Namespace) -> int:
    """Carry finished JSON cache entries (e.g. spard's SmolLM2 arms) between machines as one bundle file."""
    from icml26.atomic import atomic_write_text
    from icml26.common.cache import export_json_entries, import_json_entries

    if args.action == "export":
        if args.file is None:
            raise CliError("cache export needs KIND and FILE: `icml26 cache export spard-lm-arms bundle.json`")
        try:
            bundle = export_json_entries(args.target)
        except ValueError as exc:
            raise CliError(str(exc)) from None
        if not bundle["entries"]:
            raise CliError(f"the cache holds no finished entries of kind {args.target!r}; nothing to export")
        atomic_write_text(Path(args.file), json.dumps(bundle, indent=1, sort_keys=True) + "\n")
        print(f"wrote {len(bundle['entries'])} entries of {args.target} to {args.file}")
        return 0
    if args.file is not None:
        raise CliError("cache import takes one FILE: `icml26 cache import bundle.json`")
    path = Path(args.target)
    try:
        bundle = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CliError(f"bundle {path} does not exist") from None
    except ValueError as exc:
        raise CliError(f"bundle {path} is not valid JSON ({exc})") from None
    try:
        counts = import_json_entries(bundle)
    except ValueError as exc:
        raise CliError(f"bundle {path}: {exc}") from None
    differ = f" ({counts['differ']} of them differ from the bundle's; kept this machine's)" if counts["differ"] else ""
    print(f"{bundle['kind']}: {counts['added']} entries added, {counts['kept']} already here{differ}")
    return 0


def _seed_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    return value


def _version() -> str:
    import icml26

    return icml26.__version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="icml26",
        description="Methods of nineteen ICML 2026 papers, with CPU reproductions.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress messages")
    parser.add_argument("--version", action="version", version=f"icml26 {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("list", help="the table of papers")
    p.add_argument("--area", help=f"only one area ({', '.join(registry.AREAS)})")
    p.set_defaults(func=_cmd_list)

    p = sub.add_parser("info", help="one paper: title, url, claim, its checks (with the committed verdicts and "
                                    "the units that would resolve them), arms, config fields")
    p.add_argument("key")
    p.add_argument("--results", default="results", help="where the committed results are (default: results)")
    p.set_defaults(func=_cmd_info)

    p = sub.add_parser("run", help="run a reproduction (KEY or all)")
    p.add_argument("key", help="a paper key, or 'all' for every implemented paper")
    p.add_argument("overrides", nargs="*", metavar="field=value", help="config overrides")
    p.add_argument("--quick", action="store_true", help="the CPU setting (minutes)")
    p.add_argument("--tiny", action="store_true", help="the smoke-test setting (seconds)")
    p.add_argument("--seed", type=_seed_arg, default=None, dest="seed_given",
                   help="the seed of a single run (default 0)")
    p.add_argument("--seeds", default=None, metavar="0-4|0,3,7",
                   help="run several seeds and aggregate them (results/<key>/seeds/<s>/ and the aggregate "
                        "results/<key>/result.json)")
    p.add_argument("--resume", action="store_true",
                   help="with --seeds: skip the seeds already in the output folder (same configuration)")
    p.add_argument("--workers", type=int, default=None,
                   help="parallel seeds (default: the number of cores; one torch thread each)")
    p.add_argument("--backend", choices=("process", "ray"), default="process",
                   help="where the seeds run: local processes (default) or Ray tasks")
    p.add_argument("--address", default=None,
                   help="with --backend ray: the cluster to join ('auto', 'ray://head:10001'); "
                        "default: start a local Ray")
    p.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    p.add_argument("--out", default="results", help="results folder (default: results)")
    p.add_argument("--threads", type=int, default=None, help="torch threads (default: all cores)")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("aggregate", help="rebuild a result from its seeds with the paper's current declarations "
                                         "(roles, units, arms); measured values are not recomputed")
    p.add_argument("key")
    p.add_argument("--out", default="results", help="results folder (default: results)")
    p.add_argument("--run", default=None, help="a further run's folder name inside results/<key>/")
    p.set_defaults(func=_cmd_aggregate)

    p = sub.add_parser("report", help="rebuild results/README.md and the README table from JSON")
    p.add_argument("--results", default="results", help="results folder (default: results)")
    p.add_argument("--readme", default=None,
                   help="a README to update between its marker comments (default: the repository's "
                        "README, only when --results is the repository's own results folder)")
    p.add_argument("--paper-readmes", action="store_true", default=None,
                   help="also update each paper's README in the package (default: only for the "
                        "repository's own results folder)")
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("cache", help="carry finished JSON cache entries between machines: `export KIND FILE` "
                                     "writes a bundle, `import FILE` restores it (entries stay keyed by all "
                                     "their inputs, so only a run with the same inputs reads them)")
    p.add_argument("action", choices=("export", "import"))
    p.add_argument("target", metavar="KIND|FILE", help="export: the entries' kind (e.g. spard-lm-arms); "
                                                        "import: the bundle file")
    p.add_argument("file", nargs="?", default=None, metavar="FILE", help="export: the bundle file to write")
    p.set_defaults(func=_cmd_cache)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    # field=value items may follow options (`run KEY --quick steps=3`), so they are
    # collected from what argparse leaves over.
    args, extra = parser.parse_known_args(argv)
    if extra:
        if args.command == "run" and not any(e.startswith("-") for e in extra):
            args.overrides = list(args.overrides) + extra
        else:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    if not getattr(args, "no_progress", False):
        # Off a terminal, progress arrives as log lines (at most one per 30 s per bar).
        logging.getLogger("icml26.progress").setLevel(logging.INFO)
    if getattr(args, "command", None) == "run":
        args.seed = 0 if args.seed_given is None else args.seed_given
    with sigterm_as_interrupt() as terminated:
        code = _dispatch(args, terminated)
    return 128 + signal.SIGTERM if terminated and code == 130 else code


def _dispatch(args: argparse.Namespace, terminated: Sequence[int] = ()) -> int:
    try:
        return args.func(args)
    except CliError as exc:
        print(f"icml26: error: {exc}", file=sys.stderr)
        return EXIT_USER
    except BrokenPipeError:
        # The reader went away (`icml26 info hamu | head`): not an error; silence the final flush.
        import os

        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt as exc:
        from icml26.atomic import WrittenBeforeStop
        from icml26.sweep import SweepInterrupted

        said = (str(exc) if isinstance(exc, (SweepInterrupted, WrittenBeforeStop))
                else "nothing was written for the run in progress")
        stopped = "terminated" if terminated or isinstance(exc, Terminated) else "interrupted"
        print(f"icml26: {stopped}; {said}", file=sys.stderr)
        return 130
    except OSError as exc:
        if exc.errno not in _ENVIRONMENT_ERRNOS:
            return _internal_error()
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"icml26: error: the machine refused: {exc.strerror or exc}{where}; free space or memory, or pass a "
              "writable --out (the run in progress left the old result in place)", file=sys.stderr)
        return EXIT_ENVIRONMENT
    except MemoryError:
        print("icml26: error: out of memory; use a smaller setting (--tiny, --quick) or fewer --workers",
              file=sys.stderr)
        return EXIT_ENVIRONMENT
    except Exception:
        return _internal_error()


def _internal_error() -> int:
    traceback.print_exc()
    print("icml26: internal error (a bug, not a problem with your input): please report it with "
          "the traceback above", file=sys.stderr)
    return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
