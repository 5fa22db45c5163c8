"""Real servers (Prometheus, Slurm) started on 127.0.0.1 for the tests."""
