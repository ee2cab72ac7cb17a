package localcluster

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigSpec is one kubeconfig: a client certificate of the PKI and a server URL.
type kubeconfigSpec struct {
	Path     string
	CertFile string // base name in the PKI folder
	Server   string
}

// innerServer is the apiserver URL inside the cluster netns.
func innerServer() string { return fmt.Sprintf("https://%s:%d", GatewayIP, APIServerPort) }

// kubeconfigSpecs lists the kubeconfigs of the components; all but admin.kubeconfig
// are used inside the cluster netns.
func kubeconfigSpecs(l Layout, nodes int) []kubeconfigSpec {
	in := innerServer()
	kc := func(n string) string { return filepath.Join(l.Kubeconfigs(), n+".kubeconfig") }
	specs := []kubeconfigSpec{
		{Path: l.InnerKubeconfig(), CertFile: "admin", Server: in},
		{Path: kc("controller-manager"), CertFile: "controller-manager", Server: in},
		{Path: kc("scheduler"), CertFile: "scheduler", Server: in},
		{Path: kc("kube-proxy"), CertFile: "kube-proxy", Server: in},
	}
	for i := 1; i <= nodes; i++ {
		specs = append(specs, kubeconfigSpec{Path: nodeKubeconfig(l, i), CertFile: fmt.Sprintf("node-%d", i), Server: in})
	}
	return specs
}

func nodeKubeconfig(l Layout, i int) string {
	return filepath.Join(l.Kubeconfigs(), fmt.Sprintf("node-%d.kubeconfig", i))
}

// writeKubeconfig writes a self-contained kubeconfig (certificates embedded).
func writeKubeconfig(pkiDir string, spec kubeconfigSpec, contextName string) error {
	read := func(n string) ([]byte, error) { return os.ReadFile(filepath.Join(pkiDir, n)) }
	ca, err := read("ca.crt")
	if err != nil {
		return err
	}
	crt, err := read(spec.CertFile + ".crt")
	if err != nil {
		return err
	}
	key, err := read(spec.CertFile + ".key")
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: spec.Server, CertificateAuthorityData: ca}
	cfg.AuthInfos[contextName] = &clientcmdapi.AuthInfo{ClientCertificateData: crt, ClientKeyData: key}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName}
	cfg.CurrentContext = contextName
	if err := os.MkdirAll(filepath.Dir(spec.Path), 0o700); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*cfg, spec.Path)
}
