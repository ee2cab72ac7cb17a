package ociimage

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
)

// InputsKey is a digest of everything Build reads for s (host files by content: go build
// rewrites its outputs even when nothing changed, so mtimes would say little) and of salt (the
// builder's own binary): an archive written from the same key needs no rewrite, and `make
// images` skips it. Hashing the inputs costs a fraction of writing them.
func InputsKey(s Spec, salt []byte) (string, error) {
	type entry struct {
		Entry
		Host []byte // the host file's sha256
	}
	type layer struct {
		CreatedBy string
		Entries   []entry
	}
	key := struct {
		Name   string
		Config any
		Layers []layer
		Salt   [32]byte
	}{Name: s.Name, Config: s.Config, Salt: sha256.Sum256(salt)}
	for _, l := range s.Layers {
		k := layer{CreatedBy: l.CreatedBy}
		for _, e := range l.Entries {
			var host []byte
			if e.Source != "" {
				var err error
				if host, err = fileDigest(e.Source); err != nil {
					return "", err
				}
			}
			k.Entries = append(k.Entries, entry{Entry: e, Host: host})
		}
		key.Layers = append(key.Layers, k)
	}
	raw, err := json.Marshal(key)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:]), nil
}

func fileDigest(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}
