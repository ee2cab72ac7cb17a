// Package manager wires every controller of the operator into a controller-runtime manager,
// sharing one TLS source and one etcd access among them. The manager binary and the in-process
// e2e operator both call Setup, so they run the same controllers.
package manager

import (
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/cozystack/etcd-operator/operator/internal/controller/etcdbackupschedule"
	"github.com/cozystack/etcd-operator/operator/internal/controller/etcdcluster"
	"github.com/cozystack/etcd-operator/operator/internal/controller/etcddefrag"
	"github.com/cozystack/etcd-operator/operator/internal/controller/etcddefragschedule"
	"github.com/cozystack/etcd-operator/operator/internal/controller/etcdmember"
	"github.com/cozystack/etcd-operator/operator/internal/controller/etcdrestore"
	"github.com/cozystack/etcd-operator/operator/internal/controller/etcdsnapshot"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/metrics"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
)

// Options are what the controllers take from the operator's flags.
type Options struct {
	// Workers per lifecycle controller.
	Workers int
	// ClusterDomain is the cluster's DNS domain ("" is cluster.local).
	ClusterDomain string
	// ImageRepository is the default etcd image repository.
	ImageRepository string
	// AgentImage is the operator's own image, run by snapshot and restore agents.
	AgentImage string
	// NodeGracePeriod before tmpfs members of a NotReady node are replaced (0: the default).
	NodeGracePeriod time.Duration
	// PVCNodeGracePeriod before members with a PVC on a NotReady node are replaced (0: the default).
	PVCNodeGracePeriod time.Duration
}

// Setup registers every controller with mgr.
func Setup(mgr ctrl.Manager, access *etcdaccess.Access, tls *tlsmaterial.Source, o Options) error {
	if err := metrics.Register(mgr.GetClient()); err != nil {
		return err
	}
	members := &etcdmember.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcdmember-controller"),
		Etcd: access, ImageRepository: o.ImageRepository, AgentImage: o.AgentImage, MaxConcurrentReconciles: o.Workers,
		ClusterDomain: o.ClusterDomain, TLS: tls}
	survey := &upgradeSurvey{client: mgr.GetClient(), recorder: mgr.GetEventRecorder("etcdcluster-controller"), outdated: members.Outdated}
	if err := mgr.Add(survey); err != nil {
		return err
	}
	for _, c := range []interface{ SetupWithManager(ctrl.Manager) error }{
		&etcdcluster.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcdcluster-controller"),
			Etcd: access, MaxConcurrentReconciles: o.Workers, ClusterDomain: o.ClusterDomain, TLS: tls, NodeGracePeriod: o.NodeGracePeriod,
			PVCNodeGracePeriod: o.PVCNodeGracePeriod, Observations: metrics.Observed, RolloutHold: survey.hold},
		members,
		&etcdsnapshot.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcdsnapshot-controller"),
			AgentImage: o.AgentImage, TLS: tls},
		&etcdbackupschedule.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcdbackupschedule-controller")},
		&etcdrestore.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcdrestore-controller"), TLS: tls,
			AgentImage: o.AgentImage},
		&etcddefrag.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcddefrag-controller"), Etcd: access},
		&etcddefragschedule.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcddefragschedule-controller")},
	} {
		if err := c.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	return nil
}
