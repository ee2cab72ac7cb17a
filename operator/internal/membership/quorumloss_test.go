package membership

import "testing"

func TestDecideQuorumLoss(t *testing.T) {
	lost := DataLostPrefix + "PVC gone"
	voter := func(name, broken string) Member {
		return Member{Name: name, Voter: true, Broken: broken, Ready: broken == ""}
	}
	three := func(brokenB, brokenC string) []Member {
		return []Member{voter("a", ""), voter("b", brokenB), voter("c", brokenC)}
	}
	cases := []struct {
		name   string
		o      Observed
		kind   Kind
		reason string
	}{
		{"majority lost, Wait", Observed{Formed: true, Desired: 3, Members: three(lost, lost), QuorumLoss: QuorumLossWait},
			Wait, ReasonQuorumLostForGood},
		{"no policy set behaves as Wait", Observed{Formed: true, Desired: 3, Members: three(lost, lost)}, Wait, ReasonQuorumLostForGood},
		{"majority lost, rebuild", Observed{Formed: true, Desired: 3, Members: three(lost, lost), QuorumLoss: QuorumLossRebuild},
			RebuildFromSurvivor, "QuorumRecovering"},
		{"majority lost, restore", Observed{Formed: true, Desired: 3, Members: three(lost, lost), QuorumLoss: QuorumLossRestoreLast},
			RestoreLatestSnapshot, "QuorumRecovering"},
		// A node that is only NotReady may come back: not data loss, so no recovery.
		{"majority on a NotReady node", Observed{Formed: true, Desired: 3, Members: three("node x has been NotReady", "node x has been NotReady"),
			QuorumLoss: QuorumLossRebuild}, Wait, "ClusterUnreachable"},
		{"a minority lost: the ordinary replace", Observed{Formed: true, Desired: 3, Reachable: true,
			Members: []Member{{Name: "a", Voter: true, InEtcd: true, ID: 1, Healthy: true, Ready: true},
				{Name: "b", Voter: true, InEtcd: true, ID: 2, Healthy: true, Ready: true},
				{Name: "c", Voter: true, InEtcd: true, ID: 3, Broken: lost}}, QuorumLoss: QuorumLossRebuild},
			ReplaceMember, "ReplacingMember"},
		// The first loss was being replaced (its member deleting, its removal needing quorum)
		// when the second came: the recovery must not wait for a removal that cannot happen.
		{"majority lost while the first was being replaced", Observed{Formed: true, Desired: 3,
			Members:    []Member{voter("a", ""), {Name: "b", Voter: true, Deleting: true, Broken: lost}, voter("c", lost)},
			QuorumLoss: QuorumLossRebuild}, RebuildFromSurvivor, "QuorumRecovering"},
		{"the same, Wait says so instead of waiting on the removal", Observed{Formed: true, Desired: 3,
			Members: []Member{voter("a", ""), {Name: "b", Voter: true, Deleting: true, Broken: lost}, voter("c", lost)}},
			Wait, ReasonQuorumLostForGood},
		{"a member leaving on purpose is not a loss", Observed{Formed: true, Desired: 2,
			Members: []Member{voter("a", ""), voter("b", ""), {Name: "c", Voter: true, Deleting: true}}},
			Wait, "MemberDeleting"},
		{"rebuild under way", Observed{Formed: true, Desired: 3, Members: []Member{{Name: "a", Voter: true, ForceNewCluster: true}},
			QuorumLoss: QuorumLossRebuild}, Wait, "RebuildingFromSurvivor"},
		{"rebuilt: end the force", Observed{Formed: true, Desired: 3, Reachable: true, Listed: 1,
			Members: []Member{{Name: "a", Voter: true, ForceNewCluster: true, InEtcd: true}}, QuorumLoss: QuorumLossRebuild},
			EndForceNewCluster, "QuorumRecovered"},
	}
	for _, tc := range cases {
		got := Decide(tc.o)
		if got.Kind != tc.kind || got.Reason != tc.reason {
			t.Errorf("%s: %s/%s (%s), want %s/%s", tc.name, got.Kind, got.Reason, got.Message, tc.kind, tc.reason)
		}
	}
}
