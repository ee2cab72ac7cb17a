package v1alpha2

// PodDisruptionBudgetEnabled is spec.podDisruptionBudget.enabled with its default (true), for
// objects that did not pass through the apiserver's defaulting.
func (c *EtcdCluster) PodDisruptionBudgetEnabled() bool {
	p := c.Spec.PodDisruptionBudget
	return p == nil || p.Enabled == nil || *p.Enabled
}
