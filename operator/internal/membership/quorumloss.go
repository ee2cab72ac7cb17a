package membership

import (
	"fmt"
	"strings"
)

// ReasonQuorumLostForGood: a majority of the voters lost their data; spec.quorumLoss decides.
const ReasonQuorumLostForGood = "QuorumLostForGood"

// decideQuorumLoss handles a cluster whose majority of voters has lost its data for good (a
// PVC deleted or replaced, a tmpfs Pod gone: never a member that may come back, such as one on
// a NotReady node). Wait reports it; RebuildFromSurvivor forces a one-member cluster from a
// survivor; RestoreLatestSnapshot rolls back to the newest snapshot. A rebuild under way is
// finished first, whatever else the cluster looks like.
func decideQuorumLoss(o Observed) (Action, bool) {
	if m, ok := forcing(o.Members); ok {
		if o.Reachable && o.Listed == 1 {
			return Action{Kind: EndForceNewCluster, Member: m.Name, Reason: "QuorumRecovered",
				Message: fmt.Sprintf("%s formed a one-member cluster from its data; it starts normally from now on", m.Name)}, true
		}
		return wait("RebuildingFromSurvivor", "%s restarts with --force-new-cluster", m.Name), true
	}
	if o.Reachable {
		return Action{}, false
	}
	voters, lost, survivors := 0, []string(nil), []string(nil)
	for _, m := range o.Members {
		dataLost := strings.HasPrefix(m.Broken, DataLostPrefix)
		// A voter being replaced because its data is gone still counts, as lost: etcd still
		// lists it, and without quorum it can never be removed.
		if !m.Voter || m.Dormant || (m.Deleting && !dataLost) {
			continue
		}
		voters++
		if dataLost {
			lost = append(lost, m.Name)
		} else {
			survivors = append(survivors, m.Name)
		}
	}
	if voters == 0 || len(survivors) >= Quorum(voters) {
		return Action{}, false
	}
	msg := fmt.Sprintf("%d of %d voters lost their data (%s)", len(lost), voters, strings.Join(lost, ", "))
	switch {
	case o.QuorumLoss == QuorumLossRebuild && len(survivors) > 0:
		return Action{Kind: RebuildFromSurvivor, Reason: "QuorumRecovering",
			Message: msg + "; rebuilding from the survivor with the most data (writes it never received are lost)"}, true
	case o.QuorumLoss == QuorumLossRestoreLast:
		return Action{Kind: RestoreLatestSnapshot, Reason: "QuorumRecovering",
			Message: msg + "; rolling back to the newest Complete snapshot (writes after it are lost)"}, true
	case o.QuorumLoss == QuorumLossRebuild:
		return wait(ReasonQuorumLostForGood, "%s and none survived to rebuild from", msg), true
	}
	return wait(ReasonQuorumLostForGood, "%s; spec.quorumLoss is Wait: set it to RebuildFromSurvivor or RestoreLatestSnapshot to recover", msg), true
}

func forcing(ms []Member) (Member, bool) {
	for _, m := range ms {
		if m.ForceNewCluster && !m.Deleting {
			return m, true
		}
	}
	return Member{}, false
}
