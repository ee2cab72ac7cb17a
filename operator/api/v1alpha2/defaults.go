package v1alpha2

// PodDisruptionBudgetEnabled is spec.podDisruptionBudget.enabled with its default (true), for
// objects that did not pass through the apiserver's defaulting.
func (c *EtcdCluster) PodDisruptionBudgetEnabled() bool {
	p := c.Spec.PodDisruptionBudget
	return p == nil || p.Enabled == nil || *p.Enabled
}

// Adopting reports whether etcd-migrate is still adopting the cluster (AnnotationAdopting):
// until it hands the cluster over, the operator leaves it and its members alone.
func (c *EtcdCluster) Adopting() bool { return c.Annotations[AnnotationAdopting] != "" }
