// Package reliability runs fault campaigns on the local cluster (build tag e2e): a workload
// records every operation it issues (e2eutil.History) while faults are injected, and each
// round's history is checked for linearizability with porcupine and for lost acknowledged
// writes (internal/kvcheck); the cluster and the operator must converge to the spec after each
// fault. $RELIABILITY_FAULTS sets how many faults each campaign injects (`make soak`: 50);
// TestMain prints a table of the campaigns: faults injected, operations, unknown outcomes,
// linearizable, writes lost, the slowest convergence.
package reliability
