"""The SimPy simulation: failures, the flagship job's training, research jobs, repairs, the tables and summary
a simulation writes, and sweeps of many simulations."""
