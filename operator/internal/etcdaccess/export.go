package etcdaccess

import (
	"context"
	"os"
	"path/filepath"

	"github.com/cozystack/etcd-operator/operator/internal/authcred"
)

// Export is the inverse of DialFiles: it writes the TLS material a request would dial with
// into dir (files readable by the owner only) and returns it as Files, with the members' client
// URLs and the credentials (the operator's own etcd user once auth is on). It serves programs
// that take files and flags, such as etcdctl run by the kubectl plugin.
func (a *Access) Export(ctx context.Context, req Request, dir string) (Files, error) {
	target, err := a.target(ctx, req)
	if err != nil {
		return Files{}, err
	}
	f := Files{Endpoints: target.Endpoints}
	if target.TLS != nil {
		pem, err := a.secrets.ClientPEM(ctx, req.Cluster)
		if err != nil {
			return Files{}, err
		}
		if f.CAFile, err = writeSecretFile(dir, "ca.crt", pem.CA); err != nil {
			return Files{}, err
		}
		if len(pem.Cert) > 0 {
			if f.CertFile, err = writeSecretFile(dir, "tls.crt", pem.Cert); err != nil {
				return Files{}, err
			}
			if f.KeyFile, err = writeSecretFile(dir, "tls.key", pem.Key); err != nil {
				return Files{}, err
			}
		}
	}
	if req.latches().AuthEnabled {
		if f.Username, f.Password, err = authcred.Credentials(ctx, a.secrets, req.Cluster); err != nil {
			return Files{}, err
		}
	}
	return f, nil
}

func writeSecretFile(dir, name string, data []byte) (string, error) {
	p := filepath.Join(dir, name)
	return p, os.WriteFile(p, data, 0o600)
}
