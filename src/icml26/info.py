"""``icml26 info KEY``: a paper's card, read from the registry, its declarations and its committed result."""

from __future__ import annotations

from pathlib import Path

from icml26 import registry

__all__ = ["describe"]


def describe(spec: registry.PaperSpec, results: str | Path = "results") -> None:
    """Print a paper's card: what it is, its tested usage, its checks by role (with the committed verdicts and
    the units that would resolve an unresolved one), its arms and its config fields."""
    print(f"{spec.key}: {spec.title}")
    print(f"  area:    {spec.area} ({registry.AREAS[spec.area]})")
    print(f"  url:     {spec.url or '-'}")
    print(f"  code:    {spec.code or '-'}")
    print(f"  extras:  {', '.join(spec.extras) or '-'}   ({spec.install_hint()})")
    print(f"  status:  {spec.status}")
    print(f"  claim:   {spec.claim}")
    print(f"  applies: {spec.applies}")
    if not spec.implemented:
        print("\n  (planned: no reproduction yet, so no checks and no config fields)")
        return
    usage = spec.usage_example()
    if usage:
        print(f"\nusage (the README's tested example, {spec.folder / 'README.md'}):")
        print("\n".join("    " + line if line else "" for line in usage.rstrip().splitlines()))
    checks = spec.load_claims()
    committed = _committed(spec.key, results)
    done = {c.get("id"): c for c in committed["claim"]["checks"]} if committed else {}
    unit_cost = _unit_cost(committed)
    replication = spec.load_replication()
    print(f"  unit:    {replication.unit} ({replication.why})")
    if committed and "status" in committed["claim"]:
        from icml26.budgets import claim_across_runs
        from icml26.results import collect_extra

        try:
            runs = collect_extra(results, paper=spec.key).get(spec.key, {})
        except Exception:  # a broken further run must not hide the main result here; `report` names it
            runs = {}
        status, reason = claim_across_runs(committed, runs)
        print(f"  status:  {status.upper()} in the committed result ({_seeds_of(committed)}): {reason}")
    roles = {"headline": "decides the claim", "supporting": "scored", "diagnostic": "reported, never scored"}
    print(f"\nchecks ({len(checks)}; a check holds when `measured op target`; no config field moves a target):")
    for role in roles:
        group = [c for c in checks.values() if c.role == role]
        if not group:
            continue
        print(f"  [{role}: {roles[role]}]")
        for c in group:
            print(f"  {c.id}: {c.name}")
            only = "" if set(c.settings) == {"full", "quick", "tiny"} else f"   [measured in: {', '.join(c.settings)}]"
            print(f"      {c.op} {c.target:g}   ({c.source}: {c.ref}){only}")
            extra = []
            if c.compares:
                extra.append(f"compares {' vs '.join(c.compares)}")
            if c.budget:
                extra.append(f"training budget: {c.budget} (also read at >= 3x)")
            if extra:
                print(f"      {'; '.join(extra)}")
            got = done.get(c.id)
            if got is not None and "verdict" in got:
                gate = f" (requires {', '.join(got['gated_by'])})" if got.get("gated_by") else ""
                line = (f"      committed: {'gated' if gate else got['verdict']}{gate}, {_num(got.get('value'))} [{_num((got.get('ci') or [None])[0])}, "
                        f"{_num((got.get('ci') or [None, None])[1])}], half-width {_num(got.get('half_width'))}, "
                        f"n = {got.get('n')} {got.get('unit', 'master seed')}s")
                need = got.get("n_to_resolve")
                if need is None and "n_to_resolve" not in got:  # a result aggregated before the field existed
                    from icml26.aggregate import n_to_resolve

                    need = n_to_resolve(got["op"], got["target"], got.get("value"), got.get("sd"))
                if got["verdict"] == "unresolved":
                    if need:
                        more = max(need - int(got.get("n") or 0), 0)
                        cost = f", ~{more * unit_cost(got) / 3600:.1f} CPU-hours more" if unit_cost(got) else ""
                        line += f"; ~{need} would resolve it at this spread{cost}"
                    else:
                        line += "; more units would not resolve it at this mean"
                print(line)
    arms = spec.load_arms()
    if arms:
        print("\narms (as declared in claims.py: the hyperparameters each arm is selected over, how many "
              "configurations are evaluated, on which split; an arm tuned in the run goes through the shared tuner, "
              "RunContext.tune):")
        for a in arms.values():
            space = ", ".join(f"{k} in {list(v)}" for k, v in a.space.items()) or "nothing to tune"
            print(f"  {a.id} ({a.role}): {space}; trials {a.trials} on {a.select_on}")
            for label, text in (("note", a.note), ("reason", a.reason)):
                if text:
                    print(f"      {label}: {text}")
    from icml26.common.config import config_fields

    cls = spec.load_experiment().Config
    print("\nconfig fields (default = full scale, quick = `--quick`):")
    fields = config_fields(cls)
    width = max(len(f.name) for f in fields)
    for f in fields:
        print(f"  {f.name:<{width}}  {f.type_name}")
        print(f"  {'':<{width}}    default={f.default!r}  quick={f.quick!r}")
        if f.doc:
            print(f"  {'':<{width}}    {f.doc}")


def _committed(key: str, results: str | Path) -> dict | None:
    from icml26.results import ResultError, load_result

    path = Path(results) / key / "result.json"
    if not path.is_file():
        return None
    try:
        return load_result(path)
    except ResultError as exc:
        print(f"  (the committed result cannot be read: {exc})")
        return None


def _seeds_of(data: dict) -> str:
    seeds = data.get("seeds", [data["seed"]])
    return f"{len(seeds)} seed{'s' if len(seeds) != 1 else ''}"


def _unit_cost(data: dict | None):
    """``check -> seconds of one unit on one core`` from a committed result's seed wall times."""
    def cost(check: dict) -> float | None:
        if not data:
            return None
        times = list((data["provenance"].get("seed_wall_times_s") or {}).values()) or [data["provenance"]["wall_time_s"]]
        per_seed = sum(times) / len(times)
        seeds = max(int(check.get("seeds") or 1), 1)
        per_unit = per_seed * seeds / max(int(check.get("n") or 1), 1)
        return per_unit
    return cost


def _num(x) -> str:
    return "-" if x is None else f"{x:.4g}"
