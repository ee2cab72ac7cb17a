package provider

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// VolumeResync is how often every watched Secret and ConfigMap is re-checked against the
// volumes that project it, besides the watch events; the kubelet's sync period is a minute.
const VolumeResync = 30 * time.Second

// sourceRef names a Secret or ConfigMap a volume projects.
type sourceRef struct {
	secret    bool
	namespace string
	name      string
}

// WatchVolumeSources keeps the Secret and ConfigMap volumes of running pods current, as the
// kubelet does: a changed object is re-projected into every volume that uses it, atomically
// (a new generation behind the ..data link), without restarting anything. This is how a
// renewed certificate reaches a running etcd, which reads its key pair per handshake. Watch
// events drive it; the informer's periodic resync repeats the check, so a failed write or a
// missed event heals within VolumeResync.
func (p *Provider) WatchVolumeSources(ctx context.Context, resync time.Duration) error {
	factory := informers.NewSharedInformerFactory(p.cfg.Client, resync)
	handler := func(secret bool) cache.ResourceEventHandlerFuncs {
		on := func(obj any) {
			if m, ok := obj.(interface {
				GetNamespace() string
				GetName() string
			}); ok {
				p.refreshVolumes(ctx, sourceRef{secret: secret, namespace: m.GetNamespace(), name: m.GetName()})
			}
		}
		// A deleted source leaves the last content in place, as with the kubelet.
		return cache.ResourceEventHandlerFuncs{AddFunc: on, UpdateFunc: func(_, obj any) { on(obj) }}
	}
	secrets, configMaps := factory.Core().V1().Secrets(), factory.Core().V1().ConfigMaps()
	if _, err := secrets.Informer().AddEventHandler(handler(true)); err != nil {
		return err
	}
	if _, err := configMaps.Informer().AddEventHandler(handler(false)); err != nil {
		return err
	}
	p.mu.Lock()
	p.sources = &sourceCache{secrets: secrets.Lister(), configMaps: configMaps.Lister(),
		synced: func() bool { return secrets.Informer().HasSynced() && configMaps.Informer().HasSynced() }}
	p.mu.Unlock()
	factory.Start(ctx.Done())
	return nil
}

// sourceCache serves volume content from the watch's cache, so that the resync of every
// referenced Secret does not become an API read per pod and period.
type sourceCache struct {
	secrets    corelisters.SecretLister
	configMaps corelisters.ConfigMapLister
	synced     func() bool
}

func (p *Provider) cache() *sourceCache {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sources == nil || !p.sources.synced() {
		return nil
	}
	return p.sources
}

// getSecret reads a Secret from the cache; one the cache does not hold yet (just created, the
// event still on its way) is read from the API, so a new pod does not wait for the watch.
func (p *Provider) getSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	if c := p.cache(); c != nil {
		if s, err := c.secrets.Secrets(namespace).Get(name); err == nil {
			return s, nil
		}
	}
	return p.cfg.Client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
}

// getConfigMap is getSecret for ConfigMaps.
func (p *Provider) getConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	if c := p.cache(); c != nil {
		if cm, err := c.configMaps.ConfigMaps(namespace).Get(name); err == nil {
			return cm, nil
		}
	}
	return p.cfg.Client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
}

// refreshVolumes re-projects ref into the volumes of the pods that use it.
func (p *Provider) refreshVolumes(ctx context.Context, ref sourceRef) {
	p.mu.Lock()
	var rts []*podRuntime
	for _, rt := range p.pods {
		if rt.pod.Namespace == ref.namespace {
			rts = append(rts, rt)
		}
	}
	p.mu.Unlock()
	for _, rt := range rts {
		rt.refreshVolumes(ctx, ref)
	}
}

// refreshVolumes rewrites the pod's volumes that project ref, once the pod's volumes exist.
// Service account token volumes are left alone: re-projecting them would mint a token per
// resync.
func (rt *podRuntime) refreshVolumes(ctx context.Context, ref sourceRef) {
	rt.volMu.Lock()
	defer rt.volMu.Unlock()
	rt.mu.Lock()
	vs, deleting := rt.volumes, rt.deleting
	rt.mu.Unlock()
	if vs == nil || deleting {
		return
	}
	for i := range vs.pod.Spec.Volumes {
		v := &vs.pod.Spec.Volumes[i]
		if !projects(v, ref) || hasToken(v) {
			continue
		}
		if _, err := vs.setup(ctx, v); err != nil {
			rt.log()("volume refresh failed; retried at the next resync", "volume", v.Name, "err", err)
		}
	}
}

// projects reports whether v shows (part of) the Secret or ConfigMap ref names.
func projects(v *corev1.Volume, ref sourceRef) bool {
	switch {
	case v.Secret != nil:
		return ref.secret && v.Secret.SecretName == ref.name
	case v.ConfigMap != nil:
		return !ref.secret && v.ConfigMap.Name == ref.name
	case v.Projected != nil:
		for _, s := range v.Projected.Sources {
			if (ref.secret && s.Secret != nil && s.Secret.Name == ref.name) ||
				(!ref.secret && s.ConfigMap != nil && s.ConfigMap.Name == ref.name) {
				return true
			}
		}
	}
	return false
}

func hasToken(v *corev1.Volume) bool {
	if v.Projected == nil {
		return false
	}
	for _, s := range v.Projected.Sources {
		if s.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}
