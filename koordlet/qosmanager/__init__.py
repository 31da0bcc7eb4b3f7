"""The QoS manager: strategies that keep latency-sensitive work safe while best-effort
work soaks up idle capacity (CPU suppress, BE memory/CPU eviction, CPU burst, memory QoS,
resctrl), driven by the NodeSLO.

Each strategy is one module: a pure decision plus a thin shell that reads the two hubs
and writes through the resource executor; `framework` schedules them.
"""
