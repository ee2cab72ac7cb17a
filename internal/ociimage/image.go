package ociimage

import (
	"fmt"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Spec is an image: its name, its layers (each a list of entries, the base first; a layer
// two images share is stored once by a node's containerd) and its runtime config.
type Spec struct {
	Name   string
	Layers []LayerSpec
	Config v1.Config
}

// LayerSpec is one layer and what its history entry says made it.
type LayerSpec struct {
	CreatedBy string
	Entries   []Entry
}

// Platform is the platform of every image built here: Linux on this machine's architecture,
// which is the architecture of the binaries they pack (built here, or the tools cache's).
var Platform = v1.Platform{OS: "linux", Architecture: runtime.GOARCH}

// Build makes the image the spec describes (OCI media types, every time at the epoch).
func Build(s Spec) (v1.Image, error) {
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	for _, ls := range s.Layers {
		layer, err := Layer(ls.Entries)
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", s.Name, err)
		}
		img, err = mutate.Append(img, mutate.Addendum{
			Layer: layer, MediaType: types.OCIUncompressedLayer,
			History: v1.History{Created: v1.Time{Time: epoch}, CreatedBy: ls.CreatedBy},
		})
		if err != nil {
			return nil, fmt.Errorf("image %s: %w", s.Name, err)
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image %s: %w", s.Name, err)
	}
	cf = cf.DeepCopy()
	cf.Config = s.Config
	cf.OS, cf.Architecture = Platform.OS, Platform.Architecture
	cf.Created = v1.Time{Time: epoch}
	return mutate.ConfigFile(img, cf)
}
