//go:build e2e

package tenants

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
)

// tenantCreds is what Kamaji's etcd driver gives one tenant's kube-apiserver: the DataStore's
// endpoints and CA, and a client certificate with CN = the tenant's etcd user.
type tenantCreds struct {
	endpoints       []string
	caPEM           []byte
	certPEM, keyPEM []byte
}

// secretRef reads one key of a DataStore's Secret reference.
func secretRef(t *testing.T, c *framework.Cluster, r kamaji.ContentRef) []byte {
	t.Helper()
	if r.Content != nil {
		return r.Content
	}
	data := e2eutil.SecretData(t, c, r.SecretReference.Namespace, r.SecretReference.Name)
	v, ok := data[r.SecretReference.KeyPath]
	if !ok {
		t.Fatalf("Secret %s/%s has no %s", r.SecretReference.Namespace, r.SecretReference.Name, r.SecretReference.KeyPath)
	}
	return v
}

// dataStoreClient connects to the DataStore the way Kamaji does: its endpoints over TLS, its CA,
// the client certificate it names (or the one given).
func dataStoreClient(t *testing.T, c *framework.Cluster, ds *kamaji.DataStore, cert *tls.Certificate) (*clientv3.Client, error) {
	t.Helper()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(secretRef(t, c, ds.Spec.TLSConfig.CertificateAuthority.Certificate)) {
		t.Fatal("DataStore CA certificate does not parse")
	}
	if cert == nil {
		pair, err := tls.X509KeyPair(secretRef(t, c, ds.Spec.TLSConfig.ClientCertificate.Certificate),
			secretRef(t, c, ds.Spec.TLSConfig.ClientCertificate.PrivateKey))
		if err != nil {
			t.Fatal(err)
		}
		cert = &pair
	}
	var endpoints []string
	for _, e := range ds.Spec.Endpoints {
		endpoints = append(endpoints, "https://"+e)
	}
	conf := e2eutil.ClientConfig(c, endpoints...)
	conf.TLS = &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12}
	cli, err := clientv3.New(conf)
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli, nil
}

// playKamaji does what Kamaji's etcd driver does for a TCP (user without password, a role
// with read-write on /<schema>/, the user granted it) and mints the tenant's client certificate
// from the DataStore's CA certificate and key.
func playKamaji(t *testing.T, c *framework.Cluster, dsName, user, schema string) tenantCreds {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ds := &kamaji.DataStore{}
	if err := c.Client.Get(ctx, client.ObjectKey{Name: dsName}, ds); err != nil {
		t.Fatal(err)
	}
	cli, err := dataStoreClient(t, c, ds, nil)
	if err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitNoError(t, time.Minute, "Kamaji's health check (AuthStatus) with the DataStore's root certificate", func() error {
		_, err := cli.AuthStatus(ctx)
		return err
	})
	prefix := "/" + schema + "/"
	for _, step := range []func() error{
		func() error {
			_, err := cli.UserAddWithOptions(ctx, user, "", &clientv3.UserAddOptions{NoPassword: true})
			return err
		},
		func() error { _, err := cli.RoleAdd(ctx, schema); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, schema, prefix, clientv3.GetPrefixRangeEnd(prefix), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserGrantRole(ctx, user, schema); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	caPEM := secretRef(t, c, ds.Spec.TLSConfig.CertificateAuthority.Certificate)
	certPEM, keyPEM := mintClient(t, caPEM, secretRef(t, c, *ds.Spec.TLSConfig.CertificateAuthority.PrivateKey), user)
	return tenantCreds{endpoints: ds.Spec.Endpoints, caPEM: caPEM, certPEM: certPEM, keyPEM: keyPEM}
}

// mintClient signs a client certificate with CN cn by the CA (as Kamaji does per tenant).
func mintClient(t *testing.T, caPEM, caKeyPEM []byte, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	ca, err := tls.X509KeyPair(caPEM, caKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, ca.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}
