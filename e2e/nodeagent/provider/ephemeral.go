package provider

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Ephemeral containers (pods/ephemeralcontainers, what `kubectl debug` adds) as the kubelet runs
// them: virtual-kubelet hands a changed spec.ephemeralContainers to UpdatePod (it is one of the
// fields its podsEqual compares), the API only ever appends to the list, and each new entry is
// started once the pod's network and volumes exist — init containers need not have finished —
// and never restarted. When the pod completes they are stopped, and none starts afterwards.
//
// There is no PID namespace to share with spec.targetContainerName: the agent gives no container
// a PID namespace of its own (the pid it starts is the container's pid, which re-adoption and
// fault injection rely on), so every container already sees every process of the node, the
// target's included, and reaches the target's filesystem through /proc/<pid>/root as with a
// shared PID namespace. The target is honoured as the kubelet does otherwise: the ephemeral
// container waits for it to be running.

// errEphemeralClosed: the pod completed or stopped; no ephemeral container starts any more.
var errEphemeralClosed = errors.New("the pod no longer starts ephemeral containers")

// targetError says why an ephemeral container's target cannot be joined (yet); it is retried.
type targetError struct{ msg string }

func (e *targetError) Error() string { return e.msg }

func newEphemeralRuntime(ec *corev1.EphemeralContainer) *containerRuntime {
	c := newContainerRuntime(corev1.Container(ec.EphemeralContainerCommon), false, "ContainerCreating")
	c.ephemeral, c.targetName = true, ec.TargetContainerName
	return c
}

// addEphemeralLocked creates the runtimes of the ephemeral containers it does not know yet and
// starts their supervisors, unless the pod admits none any more (then they stay waiting, as the
// kubelet leaves a terminal pod alone). rt.mu is held.
func (rt *podRuntime) addEphemeralLocked(ecs []corev1.EphemeralContainer) bool {
	added := false
	for i := range ecs {
		if rt.findLocked(ecs[i].Name) != nil {
			continue
		}
		c := newEphemeralRuntime(&ecs[i])
		rt.ecs = append(rt.ecs, c)
		added = true
		if !rt.ephClosed {
			rt.ephWG.Add(1)
			go rt.runEphemeral(c)
		}
	}
	return added
}

// findLocked is the container of that name (any kind); rt.mu is held.
func (rt *podRuntime) findLocked(name string) *containerRuntime {
	for _, c := range rt.allLocked() {
		if c.name == name {
			return c
		}
	}
	return nil
}

// runEphemeral runs one ephemeral container once.
func (rt *podRuntime) runEphemeral(c *containerRuntime) {
	defer rt.ephWG.Done()
	select {
	case <-rt.prepared:
	case <-rt.ephCtx.Done():
		return
	}
	rt.mu.Lock()
	done := c.finished != nil // ran under an earlier agent
	rt.mu.Unlock()
	if done {
		return
	}
	h := rt.start(rt.ephCtx, c)
	if h == nil {
		return // the pod stopped or completed first
	}
	code, _, stopped := rt.wait(rt.ephCtx, c, h)
	select {
	case <-h.Done():
	default:
		return // the agent exits and leaves it running: the next agent re-adopts it
	}
	var term corev1.ContainerState
	if !stopped {
		term = rt.ended(c, h)
	}
	rt.mu.Lock()
	if !stopped {
		c.state = term
	}
	c.finished = ptr.To(code)
	rt.mu.Unlock()
	rt.persist()
}

// checkTarget fails while an ephemeral container's target is not running, with the kubelet's
// words when there is no such container.
func (rt *podRuntime) checkTarget(c *containerRuntime) error {
	if !c.ephemeral || c.targetName == "" {
		return nil
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, t := range append(append([]*containerRuntime{}, rt.initCs...), rt.cs...) {
		if t.name != c.targetName {
			continue
		}
		if t.handle == nil {
			return &targetError{fmt.Sprintf("target container %s is not running", c.targetName)}
		}
		return nil
	}
	return &targetError{fmt.Sprintf("unable to find target container %s", c.targetName)}
}

// stopEphemeral ends the ephemeral containers of a pod that completed, as the kubelet kills
// every container of a terminal pod, and lets none start afterwards: their supervisors stop
// them when ephCtx ends.
func (rt *podRuntime) stopEphemeral() {
	rt.ephMu.Lock()
	rt.stopEph()
	rt.ephMu.Unlock()
	rt.closeEphemeral()
}

// closeEphemeral admits no further ephemeral container and waits for the supervisors to end
// (their contexts must be done, or ending).
func (rt *podRuntime) closeEphemeral() {
	rt.mu.Lock()
	rt.ephClosed = true
	rt.mu.Unlock()
	rt.ephWG.Wait()
}
