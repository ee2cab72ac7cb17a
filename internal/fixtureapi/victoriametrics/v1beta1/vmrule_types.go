package v1beta1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// VMRule holds alerting and recording rule groups that vmalert evaluates.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type VMRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VMRuleSpec `json:"spec"`
	// +optional
	Status VMRuleStatus `json:"status,omitempty"`
}

// VMRuleSpec is the rule groups.
type VMRuleSpec struct {
	Groups []RuleGroup `json:"groups"`
}

// RuleGroup is a group of rules evaluated together.
type RuleGroup struct {
	Name string `json:"name"`
	// +optional
	Interval string `json:"interval,omitempty"`
	// +optional
	Concurrency int `json:"concurrency,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	Rules  []Rule            `json:"rules"`
}

// Rule is an alerting rule (alert) or a recording rule (record).
type Rule struct {
	// +optional
	Record string `json:"record,omitempty"`
	// +optional
	Alert string `json:"alert,omitempty"`
	Expr  string `json:"expr"`
	// +optional
	For string `json:"for,omitempty"`
	// +optional
	KeepFiringFor string `json:"keep_firing_for,omitempty"`
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// VMRuleStatus is left open: the fixtures validate what charts write, not status.
// +kubebuilder:pruning:PreserveUnknownFields
type VMRuleStatus struct{}
