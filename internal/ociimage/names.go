package ociimage

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// PauseImage is containerd v2.3.7's default sandbox image (DefaultSandboxImage in its
// internal/cri/config), so a node's containerd needs no sandbox setting to find ours.
const PauseImage = "registry.k8s.io/pause:3.10.2"

// The archives `make images` writes into its output folder (bin/images), one per image.
const (
	OperatorArchive = "operator.tar"
	PauseArchive    = "pause.tar"
)

// EtcdArchive is the archive of EtcdImage(version).
func EtcdArchive(version string) string {
	return "etcd-v" + strings.TrimPrefix(version, "v") + ".tar"
}

// EtcdImage is the image a member Pod of this etcd version runs when its cluster names no
// repository: the operator's default repository, tagged v<version> as member Pods ask.
func EtcdImage(version string) string {
	return v1alpha2.DefaultImageRepository + ":v" + strings.TrimPrefix(version, "v")
}

// OperatorImage is the image the operator chart in chartDir runs with no values:
// <image.repository>:<appVersion> (the chart's image.tag defaults to its appVersion).
func OperatorImage(chartDir string) (string, error) {
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	var values struct {
		Image struct {
			Repository string `json:"repository"`
			Tag        string `json:"tag"`
		} `json:"image"`
	}
	if err := readYAML(filepath.Join(chartDir, "Chart.yaml"), &chart); err != nil {
		return "", err
	}
	if err := readYAML(filepath.Join(chartDir, "values.yaml"), &values); err != nil {
		return "", err
	}
	tag := values.Image.Tag
	if tag == "" {
		tag = chart.AppVersion
	}
	if values.Image.Repository == "" || tag == "" {
		return "", fmt.Errorf("chart %s: no image.repository, or neither image.tag nor appVersion", chartDir)
	}
	return values.Image.Repository + ":" + tag, nil
}

func readYAML(path string, into any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
