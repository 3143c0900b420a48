"""`countersign bench`: Countersign as users run it, measured against floors from the same run."""

from bot.bench.runner import BenchOptions, add_bench_arguments, bench_command, run_bench

__all__ = ["BenchOptions", "add_bench_arguments", "bench_command", "run_bench"]
