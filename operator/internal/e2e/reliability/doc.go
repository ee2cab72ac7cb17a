// Package reliability runs fault campaigns on the local cluster (build tag e2e): a workload
// records every operation it issues (e2eutil.History) while faults are injected, and the
// history is checked for linearizability with porcupine (internal/kvcheck); the cluster and the
// operator must converge to the spec afterwards. Each campaign reports the faults injected,
// the operations, those with an unknown outcome, and the time to converge.
package reliability
