"""The datacenter and its network: topology, the fabric's links and routes, traffic and link faults."""
