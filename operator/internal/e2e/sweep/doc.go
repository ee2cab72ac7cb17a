// Package sweep proves on the local cluster that the operator may die at any step of a
// disruptive operation: for each crash point of package crashpoint (bootstrap, scale up and
// down, pause and resume, rollout, CA rotation, auth enable, snapshot, in-place rollback) the
// operator built with the crashpoint tag is started armed at that step, the operation is
// triggered, the process must exit there, and the operator restarted unarmed must converge
// with no orphan learner, one EtcdMember per etcd member, its conditions healthy and no Pod or
// PVC outliving its member. The test logs a table of operation × step → seconds to converge.
// By default it runs a selection of steps; SWEEP_FULL=1 runs every step.
package sweep
