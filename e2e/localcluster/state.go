package localcluster

import (
	"encoding/json"
	"os"
	"time"
)

// State is what the supervisor publishes in <statedir>/state.json.
type State struct {
	Name            string    `json:"name"`
	Dir             string    `json:"dir"`
	Netns           string    `json:"netns"`
	SupervisorPID   int       `json:"supervisorPID"`
	Nodes           int       `json:"nodes"`         // node agents: nodes 1..Nodes
	RealNodes       []int     `json:"realNodes"`     // the indices of the real nodes (kubelet + containerd)
	Ctr             string    `json:"ctr,omitempty"` // containerd's ctr of the tools cache, for real nodes
	ClusterDomain   string    `json:"clusterDomain"` // the cluster's DNS domain (cluster.local unless chosen)
	Ready           bool      `json:"ready"`
	Error           string    `json:"error,omitempty"`
	Kubeconfig      string    `json:"kubeconfig"`      // host: https://127.0.0.1:<APIServerPort>
	InnerKubeconfig string    `json:"innerKubeconfig"` // inside the netns: https://10.244.0.1:6443
	APIServerPort   int       `json:"apiServerPort"`   // host port of the forwarder
	ControlSocket   string    `json:"controlSocket"`
	StartedAt       time.Time `json:"startedAt"`
	ReadyAfter      Duration  `json:"readyAfter"`
	Timings         []Timing  `json:"timings"`
}

// Duration marshals as a Go duration string.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// ReadState reads the published state of cluster name under root ("" = DefaultStateRoot).
func ReadState(root, name string) (*State, error) {
	if root == "" {
		root = DefaultStateRoot
	}
	var s State
	err := readJSON(Layout{Dir: root + "/" + name}.StateFile(), &s)
	return &s, err
}
