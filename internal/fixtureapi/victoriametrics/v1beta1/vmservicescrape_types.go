package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// VMServiceScrape has vmagent scrape the endpoints of the Services its selector matches.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type VMServiceScrape struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec VMServiceScrapeSpec `json:"spec"`
	// +optional
	Status VMServiceScrapeStatus `json:"status,omitempty"`
}

// VMServiceScrapeSpec selects Services and says how to scrape their endpoints.
type VMServiceScrapeSpec struct {
	// +kubebuilder:validation:Enum=endpoints;service;endpointslices
	// +optional
	DiscoveryRole string `json:"discoveryRole,omitempty"`
	// Selector selects Services by their labels.
	Selector metav1.LabelSelector `json:"selector"`
	// +optional
	NamespaceSelector *NamespaceSelector `json:"namespaceSelector,omitempty"`
	Endpoints         []Endpoint         `json:"endpoints"`
	// +optional
	JobLabel string `json:"jobLabel,omitempty"`
	// +optional
	TargetLabels []string `json:"targetLabels,omitempty"`
	// +optional
	PodTargetLabels []string `json:"podTargetLabels,omitempty"`
	// +optional
	SampleLimit int64 `json:"sampleLimit,omitempty"`
}

// NamespaceSelector is all namespaces (any) or the listed ones.
type NamespaceSelector struct {
	// +optional
	Any bool `json:"any,omitempty"`
	// +optional
	MatchNames []string `json:"matchNames,omitempty"`
}

// Endpoint is one scraped port of the selected Services.
type Endpoint struct {
	// Port is the name of a Service port.
	// +optional
	Port string `json:"port,omitempty"`
	// +optional
	TargetPort *intstr.IntOrString `json:"targetPort,omitempty"`
	// +optional
	Path string `json:"path,omitempty"`
	// +optional
	Scheme string `json:"scheme,omitempty"`
	// +optional
	Params map[string][]string `json:"params,omitempty"`
	// +optional
	Interval string `json:"interval,omitempty"`
	// +optional
	ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
	// +optional
	HonorLabels bool `json:"honorLabels,omitempty"`
	// +optional
	HonorTimestamps *bool `json:"honorTimestamps,omitempty"`
}

// VMServiceScrapeStatus is left open: the fixtures validate what charts write, not status.
// +kubebuilder:pruning:PreserveUnknownFields
type VMServiceScrapeStatus struct{}
