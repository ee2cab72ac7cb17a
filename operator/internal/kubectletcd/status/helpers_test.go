package status

import (
	"io"

	corev1 "k8s.io/api/core/v1"
)

type ioWriter = io.Writer

func corev1Ref(name string) corev1.LocalObjectReference {
	return corev1.LocalObjectReference{Name: name}
}
