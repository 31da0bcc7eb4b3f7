"""What the cluster learns from the agent: the NodeMetric status (usage averages,
percentiles, pods by priority and QoS), Katalyst's realtime overcommit ratios and
Koordinator's batch resources, sent to the API server or served standalone."""
