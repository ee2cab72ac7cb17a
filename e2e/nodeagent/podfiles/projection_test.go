package podfiles

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestKeysToFiles(t *testing.T) {
	data := map[string][]byte{"b": []byte("2"), "a": []byte("1")}
	cases := []struct {
		name     string
		items    []corev1.KeyToPath
		mode     *int32
		optional bool
		want     []File
		wantErr  bool
	}{
		{name: "all keys sorted", mode: ptr.To[int32](0o400),
			want: []File{{Path: "a", Data: []byte("1"), Mode: 0o400}, {Path: "b", Data: []byte("2"), Mode: 0o400}}},
		{name: "items with own mode", items: []corev1.KeyToPath{{Key: "b", Path: "dir/bee", Mode: ptr.To[int32](0o600)}},
			want: []File{{Path: "dir/bee", Data: []byte("2"), Mode: 0o600}}},
		{name: "missing key", items: []corev1.KeyToPath{{Key: "c", Path: "c"}}, wantErr: true},
		{name: "missing optional key", items: []corev1.KeyToPath{{Key: "c", Path: "c"}}, optional: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := KeysToFiles(data, tc.items, tc.mode, tc.optional)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v want %+v", got, tc.want)
			}
			for i := range got {
				if got[i].Path != tc.want[i].Path || string(got[i].Data) != string(tc.want[i].Data) || got[i].Mode != tc.want[i].Mode {
					t.Fatalf("got %+v want %+v", got[i], tc.want[i])
				}
			}
		})
	}
}

func TestFieldValue(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u-1",
			Labels: map[string]string{"app": "etcd", "b": "x y"}, Annotations: map[string]string{"k": "v"}},
		Spec:   corev1.PodSpec{NodeName: "n1"},
		Status: corev1.PodStatus{PodIP: "10.244.1.2"},
	}
	cases := map[string]string{
		"metadata.name": "p", "metadata.namespace": "ns", "metadata.uid": "u-1",
		"metadata.labels['app']": "etcd", "metadata.annotations['k']": "v",
		"metadata.labels": "app=\"etcd\"\nb=\"x y\"", "spec.nodeName": "n1", "status.podIP": "10.244.1.2",
	}
	for path, want := range cases {
		if got, err := FieldValue(pod, path); err != nil || got != want {
			t.Errorf("FieldValue(%s) = %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := FieldValue(pod, "spec.bogus"); err == nil {
		t.Error("want error for unknown field")
	}
}

func TestResourceValue(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}}}}}
	cases := []struct {
		ref  corev1.ResourceFieldSelector
		want string
	}{
		{corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}, "256"},
		{corev1.ResourceFieldSelector{Resource: "limits.cpu"}, "8"},
		{corev1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.cpu", Divisor: resource.MustParse("1m")}, "8000"},
	}
	for _, tc := range cases {
		if got, err := ResourceValue(pod, &tc.ref); err != nil || got != tc.want {
			t.Errorf("%+v: got %q, %v; want %q", tc.ref, got, err, tc.want)
		}
	}
}
