package provider

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// The kubelet's wording for pods killed by a graceful node shutdown (pkg/kubelet/nodeshutdown):
// controllers and tools recognise such pods by this reason and message.
const (
	NodeShutdownReason  = "Terminated"
	NodeShutdownMessage = "Pod was terminated in response to imminent node shutdown."
)

// errNodeShuttingDown refuses new pods once a graceful shutdown began (the kubelet's admission
// does the same): a process started now would outlive the agent.
var errNodeShuttingDown = errors.New("node is shutting down")

// savedTerminal is how a pod ended for good; a pod saved with it is never started again.
type savedTerminal struct {
	Phase   corev1.PodPhase `json:"phase"`
	Reason  string          `json:"reason,omitempty"`
	Message string          `json:"message,omitempty"`
}

// ShutdownNode is a graceful node shutdown, like the kubelet's GracefulNodeShutdown: new pods are
// refused; every pod that is not already terminal has its processes stopped within budget (each
// pod's own grace period if shorter) and ends Failed with reason Terminated, its containers
// terminated and a DisruptionTarget condition; that status is written to the API before it
// returns. A terminal pod is never restarted, so the next agent leaves these pods alone.
func (p *Provider) ShutdownNode(ctx context.Context, budget time.Duration) error {
	p.mu.Lock()
	p.shuttingDown = true
	rts := make([]*podRuntime, 0, len(p.pods))
	for _, rt := range p.pods {
		rts = append(rts, rt)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	ended := make([]bool, len(rts))
	for i, rt := range rts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ended[i] = rt.shutdownGracefully(budget)
		}()
	}
	wg.Wait()
	var errs []error
	for i, rt := range rts {
		if ended[i] {
			errs = append(errs, p.reportTerminal(ctx, rt))
		}
	}
	return errors.Join(errs...)
}

// shutdownGracefully stops the pod for a node shutdown and reports whether this ended it (false
// for a pod that was already terminal or being deleted: its status stays as it is).
func (rt *podRuntime) shutdownGracefully(budget time.Duration) bool {
	rt.mu.Lock()
	active := !rt.deleting && rt.apiStatus == nil && rt.phase != corev1.PodSucceeded && rt.phase != corev1.PodFailed
	if !rt.killing {
		rt.killing = true
		rt.grace = min(gracePeriod(rt.pod), budget)
	}
	rt.nodeShutdown = active
	rt.stopRun()
	rt.mu.Unlock()
	<-rt.finished
	if !active {
		return false
	}
	rt.endByShutdown(time.Now())
	return true
}

// endByShutdown records the kubelet's terminal status of a pod killed by a node shutdown and
// saves it, so that no later agent starts the pod again even if the API never heard of it.
func (rt *podRuntime) endByShutdown(now time.Time) {
	rt.mu.Lock()
	rt.phase, rt.reason, rt.message = corev1.PodFailed, NodeShutdownReason, NodeShutdownMessage
	rt.disrupted = true
	for _, c := range rt.allLocked() {
		if c.state.Terminated == nil {
			// Never ran, or waited for a restart: what the kubelet says of such a container.
			c.state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137,
				Reason: "ContainerStatusUnknown", Message: "The container could not be located when the pod was terminated",
				FinishedAt: metav1.NewTime(now)}}
		}
		c.finished = ptr.To(c.exitCode())
	}
	if rt.saved != nil {
		rt.saved.Terminal = &savedTerminal{Phase: rt.phase, Reason: rt.reason, Message: rt.message}
	}
	rt.mu.Unlock()
	if rt.saved != nil {
		rt.persist()
	} else {
		rt.changed()
	}
}

// restoreTerminal takes over a pod an earlier agent ended for good (a node shutdown): it reports
// that status and starts nothing.
func (rt *podRuntime) restoreTerminal() bool {
	if err := rt.loadSaved(); err != nil {
		rt.log()("reading saved pod state failed", "err", err)
		return false
	}
	rt.mu.Lock()
	t := rt.saved.Terminal
	if t != nil {
		rt.phase, rt.reason, rt.message = t.Phase, t.Reason, t.Message
		rt.disrupted = t.Reason == NodeShutdownReason
		rt.podIP = rt.saved.IP // the address it had, as the API last heard (released since)
	}
	rt.mu.Unlock()
	if t == nil {
		return false
	}
	rt.log()("pod ended before this agent started; not restarting it", "phase", t.Phase, "reason", t.Reason)
	rt.changed()
	return true
}

// reportTerminal writes the pod's final status straight to the API: virtual-kubelet's status
// queue would not be drained before the agent exits.
func (p *Provider) reportTerminal(ctx context.Context, rt *podRuntime) error {
	want := rt.snapshot()
	pods := p.cfg.Client.CoreV1().Pods(want.Namespace)
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := pods.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil || cur.UID != want.UID || cur.Status.Phase == corev1.PodFailed || cur.Status.Phase == corev1.PodSucceeded {
			return err
		}
		cur.Status = want.Status
		_, err = pods.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("reporting %s/%s %s: %w", want.Namespace, want.Name, want.Status.Phase, err)
	}
	return nil
}
