package main

import (
	"context"
	"fmt"
	"os"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const defaultTokenDuration = time.Hour

// writeAdminKubeconfig writes DIR/kubeconfig: the cluster CA and an admin
// client certificate (system:masters), all inline.
func (cp *controlPlane) writeAdminKubeconfig() error {
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			panic(err) // generated moments ago by this process
		}
		return b
	}
	cfg := kubeconfig(cp.serverURL(), read(cp.pki.caCert()), "admin", &clientcmdapi.AuthInfo{
		ClientCertificateData: read(cp.pki.adminCert()),
		ClientKeyData:         read(cp.pki.adminKey()),
	}, "default")
	return clientcmd.WriteToFile(*cfg, kubeconfigFile(cp.dir))
}

func kubeconfig(server string, ca []byte, user string, auth *clientcmdapi.AuthInfo, namespace string) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["baton-test"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = auth
	cfg.Contexts["baton-test"] = &clientcmdapi.Context{Cluster: "baton-test", AuthInfo: user, Namespace: namespace}
	cfg.CurrentContext = "baton-test"
	return cfg
}

// adminClient is a clientset for the control plane running in dir.
func adminClient(dir string) (*kubernetes.Clientset, []byte, string, error) {
	restCfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigFile(dir))
	if err != nil {
		return nil, nil, "", fmt.Errorf("no ready control plane in %s: %w", dir, err)
	}
	cs, err := kubernetes.NewForConfig(restCfg)
	return cs, restCfg.CAData, restCfg.Host, err
}

// mintToken creates the namespace and ServiceAccount if they are missing and
// returns a bound token for it (TokenRequest). The token dies with the
// ServiceAccount: deleting and recreating it invalidates every earlier token.
func mintToken(dir, namespace, sa string, duration time.Duration) (string, error) {
	cs, _, _, err := adminClient(dir)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating namespace %s: %w", namespace, err)
	}
	_, err = cs.CoreV1().ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating serviceaccount %s/%s: %w", namespace, sa, err)
	}
	seconds := int64(duration.Seconds())
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for %s/%s: %w", namespace, sa, err)
	}
	return tr.Status.Token, nil
}

// writeTokenKubeconfig writes a kubeconfig at out that authenticates as the
// ServiceAccount with a freshly minted bound token.
func writeTokenKubeconfig(dir, namespace, sa, out string, duration time.Duration) error {
	token, err := mintToken(dir, namespace, sa, duration)
	if err != nil {
		return err
	}
	_, ca, server, err := adminClient(dir)
	if err != nil {
		return err
	}
	cfg := kubeconfig(server, ca, namespace+"-"+sa, &clientcmdapi.AuthInfo{Token: token}, namespace)
	return clientcmd.WriteToFile(*cfg, out)
}
