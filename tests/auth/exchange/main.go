// Command exchange-as runs the example OpenID provider of github.com/zitadel/oidc/v3 (its
// example/server/exampleop router, its example/server/storage in-memory storage and users file,
// its pkg/op grants) on a loopback address, for the tests of issue 26: OAuth 2.0 Token Exchange
// (RFC 8693), client authentication by secret and by private_key_jwt (RFC 7523 section 2.2),
// client_credentials, and the JWT profile grant (RFC 7523 section 2.1).
//
// Everything that parses, verifies, authorizes and issues is the library's. What is ours is only
// the wiring below, and one thin wrapper around the example storage, because the example's client
// type has unexported fields and no constructor for what the tests need:
//   - access tokens are JWTs (the example's clients issue opaque ones, and so does the JWT profile
//     grant by default), so an upstream can check them against the server's JWKS;
//   - one more client that authenticates with private_key_jwt, whose public key we hold;
//   - the delegation `act` claim ({"sub": <actor token's subject>}) when an actor_token is sent:
//     the example's own code for it, which it ships commented out in getTokenExchangeClaims.
//
// Usage: exchange-as -addr 127.0.0.1:0 -users USERS.json -client-key KEY.pem -ready FILE
// It prints "issuer <URL>" once it listens and writes the same URL to -ready.
package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// Test clients. Secrets are fixtures of a loopback test server, nothing else.
const (
	// A user-facing app: users log in through it (authorization code) to get their token.
	loginClient, loginSecret = "mcp-login", "mcp-login-secret"
	// The runtime's client for token exchange, authenticated by secret (HTTP Basic or form post).
	secretClient, secretSecret = "kube-mcp", "kube-mcp-secret"
	// The runtime's client for token exchange, authenticated by private_key_jwt.
	jwtClient, jwtKeyID = "kube-mcp-jwt", "kube-mcp-key"
)

// Redirect URI of mcp-login. Nothing listens there: a test reads the code from the Location header.
const loginRedirect = "http://127.0.0.1/callback"

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (loopback)")
	users := flag.String("users", "", "users file (the example storage's JSON format); required")
	keyFile := flag.String("client-key", "", "RSA private key (PEM) of "+jwtClient+"; generated if missing")
	ready := flag.String("ready", "", "file to write the issuer URL to once listening")
	flag.Parse()
	if *users == "" || *keyFile == "" {
		fmt.Fprintln(os.Stderr, "exchange-as: -users and -client-key are required")
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	fail := func(msg string, err error) { logger.Error(msg, "error", err); os.Exit(1) }

	key, err := loadOrCreateKey(*keyFile)
	if err != nil {
		fail("client key", err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fail("listen", err)
	}
	issuer := "http://" + ln.Addr().String()

	// The library's example clients: WebClient has the code, refresh_token and token-exchange
	// grants and client_secret_basic. The example's service user for client_credentials is built
	// into its storage: client id "sid1", secret "verysecret".
	storage.RegisterClients(
		storage.WebClient(loginClient, loginSecret, loginRedirect),
		storage.WebClient(secretClient, secretSecret, loginRedirect),
		storage.WebClient(jwtClient, "", loginRedirect), // authenticated by key only, see store
	)
	userStore, err := storage.StoreFromFile(*users)
	if err != nil {
		fail("users file", err)
	}
	st := &store{Storage: storage.NewStorage(userStore), jwtKey: &key.PublicKey}
	// wrapServer=true: the library's Server (op.NewLegacyServer), whose client verification
	// handles client_assertion (private_key_jwt) on every grant, token exchange included; the
	// older handlers take only client_id/secret for token exchange.
	router := exampleop.SetupServer(issuer, st, logger, true)

	if *ready != "" {
		if err := os.WriteFile(*ready, []byte(issuer+"\n"), 0o644); err != nil {
			fail("ready file", err)
		}
	}
	fmt.Printf("issuer %s\n", issuer)
	logger.Info("listening", "issuer", issuer)
	if err := (&http.Server{Handler: router}).Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fail("serve", err)
	}
}

// store is the library's example storage with three changes (see the package comment).
type store struct {
	*storage.Storage
	jwtKey *rsa.PublicKey
}

func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return jwtClientOf(c, id == jwtClient), nil
}

// ClientCredentials: the example's service user, issuing JWTs like the other clients.
func (s *store) ClientCredentials(ctx context.Context, id, secret string) (op.Client, error) {
	c, err := s.Storage.ClientCredentials(ctx, id, secret)
	if err != nil {
		return nil, err
	}
	return jwtClientOf(c, false), nil
}

// GetKeyByIDAndClientID: our private_key_jwt client's key (also the key of the JWT profile
// grant's assertions with iss = sub = kube-mcp-jwt), then the example's (the "service" user's key1).
func (s *store) GetKeyByIDAndClientID(ctx context.Context, keyID, clientID string) (*jose.JSONWebKey, error) {
	if clientID == jwtClient && keyID == jwtKeyID {
		return &jose.JSONWebKey{KeyID: keyID, Use: "sig", Algorithm: string(jose.RS256), Key: s.jwtKey}, nil
	}
	return s.Storage.GetKeyByIDAndClientID(ctx, keyID, clientID)
}

// JWTProfileTokenType (op.JWTProfileTokenStorage): the JWT profile grant issues JWTs too (the
// library's default is an opaque token).
func (s *store) JWTProfileTokenType(context.Context, op.TokenRequest) (op.AccessTokenType, error) {
	return op.AccessTokenTypeJWT, nil
}

// GetPrivateClaimsFromTokenExchangeRequest: the example's claims, plus the delegation `act`
// claim that the example ships commented out.
func (s *store) GetPrivateClaimsFromTokenExchangeRequest(ctx context.Context, r op.TokenExchangeRequest) (map[string]any, error) {
	claims, err := s.Storage.GetPrivateClaimsFromTokenExchangeRequest(ctx, r)
	if err != nil {
		return nil, err
	}
	if actor := r.GetExchangeActor(); actor != "" {
		if claims == nil {
			claims = map[string]any{}
		}
		claims["act"] = map[string]any{"sub": actor}
	}
	return claims, nil
}

type client struct {
	op.Client
	privateKeyJWT bool
}

func jwtClientOf(c op.Client, privateKeyJWT bool) op.Client { return client{c, privateKeyJWT} }

func (c client) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }

func (c client) AuthMethod() oidc.AuthMethod {
	if c.privateKeyJWT {
		return oidc.AuthMethodPrivateKeyJWT
	}
	return c.Client.AuthMethod()
}

func loadOrCreateKey(path string) (*rsa.PrivateKey, error) {
	if data, err := os.ReadFile(path); err == nil {
		block, _ := pem.Decode(data)
		if block == nil {
			return nil, fmt.Errorf("%s: no PEM block", path)
		}
		if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
			return k, nil
		}
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("%s: not an RSA key", path)
		}
		return rk, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return k, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600)
}
