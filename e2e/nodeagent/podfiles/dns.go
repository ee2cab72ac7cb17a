// Package podfiles renders the files a Pod sees: /etc/resolv.conf, /etc/hosts and the contents of
// Secret, ConfigMap, downward API and projected volumes.
package podfiles

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// DNS is the cluster's name service.
type DNS struct {
	Nameserver string // --cluster-dns
	Domain     string // --cluster-domain, e.g. cluster.local
}

// ResolvConf renders the pod's /etc/resolv.conf like the kubelet's ClusterFirst policy.
// hostResolv is the node's own resolv.conf, used for dnsPolicy Default.
func ResolvConf(pod *corev1.Pod, dns DNS, hostResolv string) string {
	policy := pod.Spec.DNSPolicy
	if policy == "" {
		policy = corev1.DNSClusterFirst
	}
	if policy == corev1.DNSClusterFirst && pod.Spec.HostNetwork {
		policy = corev1.DNSDefault
	}
	var servers, searches, options []string
	switch policy {
	case corev1.DNSDefault:
		return hostResolv
	case corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet:
		servers = []string{dns.Nameserver}
		searches = []string{pod.Namespace + ".svc." + dns.Domain, "svc." + dns.Domain, dns.Domain}
		options = []string{"ndots:5"}
	}
	if c := pod.Spec.DNSConfig; c != nil {
		servers = append(servers, c.Nameservers...)
		searches = append(searches, c.Searches...)
		for _, o := range c.Options {
			options = mergeOption(options, o)
		}
	}
	var b strings.Builder
	for _, s := range servers {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(searches, " "))
	}
	if len(options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(options, " "))
	}
	return b.String()
}

// mergeOption adds o, replacing an earlier option of the same name (dnsConfig overrides ndots).
func mergeOption(options []string, o corev1.PodDNSConfigOption) []string {
	text := o.Name
	if o.Value != nil {
		text += ":" + *o.Value
	}
	for i, existing := range options {
		if strings.SplitN(existing, ":", 2)[0] == o.Name {
			options[i] = text
			return options
		}
	}
	return append(options, text)
}

// Hostname is the pod's hostname: spec.hostname or the pod name.
func Hostname(pod *corev1.Pod) string {
	if pod.Spec.Hostname != "" {
		return pod.Spec.Hostname
	}
	return pod.Name
}

// Hosts renders the pod's /etc/hosts like the kubelet's managed hosts file.
func Hosts(pod *corev1.Pod, podIP, domain string) string {
	var b strings.Builder
	b.WriteString("# Kubernetes-managed hosts file.\n")
	b.WriteString("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
	host := Hostname(pod)
	if pod.Spec.Subdomain != "" {
		fqdn := fmt.Sprintf("%s.%s.%s.svc.%s", host, pod.Spec.Subdomain, pod.Namespace, domain)
		fmt.Fprintf(&b, "%s\t%s\t%s\n", podIP, fqdn, host)
	} else {
		fmt.Fprintf(&b, "%s\t%s\n", podIP, host)
	}
	for _, alias := range pod.Spec.HostAliases {
		fmt.Fprintf(&b, "\n# Entries added by HostAliases.\n%s\t%s\n", alias.IP, strings.Join(alias.Hostnames, "\t"))
	}
	return b.String()
}
