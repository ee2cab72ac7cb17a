package ociimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The index annotations that name an image. containerd's import takes the full name from
// AnnotationImageName (with only the OCI ref name, a tag, ctr would invent a prefix);
// AnnotationRefName carries the tag, as containerd's own export writes it, for other tools.
const (
	AnnotationImageName = "io.containerd.image.name"
	AnnotationRefName   = "org.opencontainers.image.ref.name"
)

// WriteArchive writes img, named ref, as an OCI image layout in a tar file at path (through a
// temporary file, so a reader never sees half an archive). An OCI layout rather than a
// docker-archive: containerd imports its manifest as it is, so the digest a node reports is the
// one Index computed here.
func WriteArchive(path, ref string, img v1.Image) (err error) {
	idx, err := Index(ref, img)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := writeLayout(tmp, idx, img); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	// Readable by all, as a file written with os.Create would be (CreateTemp makes it 0600).
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Index is the layout's index: img's manifest for this platform, named ref.
func Index(ref string, img v1.Image) (v1.ImageIndex, error) {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("image name %q: %w", ref, err)
	}
	platform := Platform
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), mutate.IndexAddendum{
		Add: img,
		Descriptor: v1.Descriptor{
			Platform:    &platform,
			Annotations: map[string]string{AnnotationImageName: ref, AnnotationRefName: tag.TagStr()},
		},
	}), nil
}

// writeLayout writes the layout's files: oci-layout, index.json, then the blobs (manifest,
// config, layers), each once, in that order.
func writeLayout(w io.Writer, idx v1.ImageIndex, img v1.Image) error {
	tw := tar.NewWriter(w)
	layout, _ := json.Marshal(map[string]string{"imageLayoutVersion": "1.0.0"})
	rawIndex, err := idx.RawManifest()
	if err != nil {
		return err
	}
	rawManifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	rawConfig, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"oci-layout", layout}, {"index.json", rawIndex}} {
		if err := writeFile(tw, f.name, int64(len(f.data)), bytes.NewReader(f.data)); err != nil {
			return err
		}
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: epoch}); err != nil {
			return err
		}
	}
	for _, raw := range [][]byte{rawManifest, rawConfig} {
		h, _, err := v1.SHA256(bytes.NewReader(raw))
		if err != nil {
			return err
		}
		if err := writeBlob(tw, h, int64(len(raw)), bytes.NewReader(raw)); err != nil {
			return err
		}
	}
	return writeLayers(tw, img, tw.Close)
}

// writeLayers writes each distinct layer blob, then calls done.
func writeLayers(tw *tar.Writer, img v1.Image, done func() error) error {
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	seen := map[v1.Hash]bool{}
	for _, l := range layers {
		h, err := l.Digest()
		if err != nil {
			return err
		}
		if seen[h] {
			continue
		}
		seen[h] = true
		size, err := l.Size()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		err = writeBlob(tw, h, size, rc)
		_ = rc.Close()
		if err != nil {
			return err
		}
	}
	return done()
}

func writeBlob(tw *tar.Writer, h v1.Hash, size int64, r io.Reader) error {
	return writeFile(tw, "blobs/"+h.Algorithm+"/"+h.Hex, size, r)
}

func writeFile(tw *tar.Writer, name string, size int64, r io.Reader) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: size, ModTime: epoch}); err != nil {
		return err
	}
	_, err := io.Copy(tw, r)
	return err
}
