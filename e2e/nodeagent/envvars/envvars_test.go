package envvars

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

type fakeSources struct {
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap
}

func (f fakeSources) Secret(_, name string) (*corev1.Secret, error) { return f.secrets[name], nil }
func (f fakeSources) ConfigMap(_, name string) (*corev1.ConfigMap, error) {
	return f.configMaps[name], nil
}

func TestResolve(t *testing.T) {
	src := fakeSources{
		secrets:    map[string]*corev1.Secret{"s": {Data: map[string][]byte{"pw": []byte("hunter2")}}},
		configMaps: map[string]*corev1.ConfigMap{"cm": {Data: map[string]string{"B": "from-cm", "A": "a"}}},
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "etcd-0", Namespace: "lc"},
		Status: corev1.PodStatus{PodIP: "10.244.1.5"}}
	cases := []struct {
		name    string
		c       corev1.Container
		want    []Var
		wantErr string
	}{
		{name: "order, override and expansion", c: corev1.Container{
			EnvFrom: []corev1.EnvFromSource{{Prefix: "X_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}},
			Env: []corev1.EnvVar{
				{Name: "NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				{Name: "IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
				{Name: "URL", Value: "http://$(IP):2379/$(NAME)/$(MISSING)/$$(IP)"},
				{Name: "X_A", Value: "override"},
				{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "pw"}}},
				{Name: "OPT", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "nope"}, Key: "k", Optional: ptr.To(true)}}},
			}},
			want: []Var{{"X_A", "override"}, {"X_B", "from-cm"}, {"NAME", "etcd-0"}, {"IP", "10.244.1.5"},
				{"URL", "http://10.244.1.5:2379/etcd-0/$(MISSING)/$(IP)"}, {"PW", "hunter2"}}},
		{name: "missing secret key", c: corev1.Container{Env: []corev1.EnvVar{
			{Name: "PW", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "nope"}}}}},
			wantErr: `key "nope" of secret lc/s not found`},
		{name: "missing configmap in envFrom", c: corev1.Container{
			EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "x"}}}}},
			wantErr: "configmap lc/x not found"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(pod, &tc.c, src)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, %v\nwant %v", got, err, tc.want)
			}
		})
	}
}

func TestExpandArgs(t *testing.T) {
	got := ExpandArgs([]string{"--name=$(POD)", "$(", "a$"}, []Var{{"POD", "p"}})
	if !reflect.DeepEqual(got, []string{"--name=p", "$(", "a$"}) {
		t.Fatalf("got %q", got)
	}
}
