package netfault

import (
	"net/url"

	"k8s.io/client-go/tools/clientcmd"
)

// ProxiedKubeconfig writes to out a copy of the kubeconfig at in whose
// current context reaches its API server through a new Proxy, so that one
// process's link can be cut; the caller closes the proxy.
func ProxiedKubeconfig(in, out string) (*Proxy, error) {
	cfg, err := clientcmd.LoadFromFile(in)
	if err != nil {
		return nil, err
	}
	cluster := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster]
	server, err := url.Parse(cluster.Server)
	if err != nil {
		return nil, err
	}
	proxy, err := NewProxy(server.Host)
	if err != nil {
		return nil, err
	}
	cluster.Server = "https://" + proxy.Addr()
	if err := clientcmd.WriteToFile(*cfg, out); err != nil {
		proxy.Close()
		return nil, err
	}
	return proxy, nil
}
