package audit

import (
	"slices"
	"testing"
)

// commandCases are commands as a model writes them, and as the log
// keeps them.
var commandCases = []struct{ in, want string }{
	// Nothing to hide: kept byte for byte.
	{`ls -la src && go test ./... 2>&1 | tail -5`, `ls -la src && go test ./... 2>&1 | tail -5`},
	{`mkdir -p build/out && cp -p a b`, `mkdir -p build/out && cp -p a b`},
	{`docker run -p 8080:80 nginx`, `docker run -p 8080:80 nginx`},
	{`git log --author=alice --format='%H %s'`, `git log --author=alice --format='%H %s'`},
	{`curl https://github.com/x/y.git`, `curl https://github.com/x/y.git`},
	{`echo "a bearer token is a secret"`, `echo "a bearer token is a secret"`},
	{`PATH=/usr/bin:$PATH GOPATH=/go go env`, `PATH=/usr/bin:$PATH GOPATH=/go go env`},
	{`grep -rn password src/`, `grep -rn password src/`},

	// Variables with a secret's name.
	{`API_KEY=sk-live-123 ./deploy.sh`, `API_KEY=[REDACTED] ./deploy.sh`},
	{`export TOKEN=abc123; make`, `export TOKEN=[REDACTED]; make`},
	{`export GITHUB_TOKEN="ghx 123" OTHER=1`, `export GITHUB_TOKEN="[REDACTED]" OTHER=1`},
	{`declare -x DB_PASSWORD='hunter2'`, `declare -x DB_PASSWORD='[REDACTED]'`},
	{`local secret=abc; readonly MYSQL_PWD=x`, `local secret=[REDACTED]; readonly MYSQL_PWD=[REDACTED]`},
	{`TOKENS=(a b); run`, `TOKENS=([REDACTED] [REDACTED]); run`},
	{`TOKEN+=more`, `TOKEN+=[REDACTED]`},
	{`export TOKEN=$(cat ~/.token)`, `export TOKEN=$(cat ~/.token)`},
	{`TOKEN=abc$SUFFIX x`, `TOKEN=[REDACTED]$SUFFIX x`},
	{`env AWS_SECRET_ACCESS_KEY=wJal AWS_REGION=eu-west-1 aws s3 ls`, `env AWS_SECRET_ACCESS_KEY=[REDACTED] AWS_REGION=eu-west-1 aws s3 ls`},
	{`docker run -e POSTGRES_PASSWORD=pw -e POSTGRES_USER=u postgres`, `docker run -e POSTGRES_PASSWORD=[REDACTED] -e POSTGRES_USER=u postgres`},
	{`docker build --build-arg NPM_TOKEN="x y" .`, `docker build --build-arg NPM_TOKEN="[REDACTED]" .`},
	{`PASSWORD_FILE=/run/secrets/db ./start`, `PASSWORD_FILE=/run/secrets/db ./start`},

	// Options with a secret's name.
	{`mysqldump --password=hunter2 db`, `mysqldump --password=[REDACTED] db`},
	{`tool --password hunter2 --user bob`, `tool --password [REDACTED] --user bob`},
	{`tool --api-key 'k 1' --token=t2 x`, `tool --api-key '[REDACTED]' --token=[REDACTED] x`},
	{`tool --password="a b" next`, `tool --password="[REDACTED]" next`},
	{`java -Ddb.password=pw -jar app.jar`, `java -Ddb.password=[REDACTED] -jar app.jar`},
	{`tool --token-file /etc/tok --api-key-file k.txt`, `tool --token-file /etc/tok --api-key-file k.txt`},
	{`echo pw | docker login --password-stdin registry.example.com`, `echo pw | docker login --password-stdin registry.example.com`},
	{`tool --no-auth target --password -v`, `tool --no-auth target --password -v`},
	{`npm config set //registry.npmjs.org/:_authToken=npmtok`, `npm config set //registry.npmjs.org/:_authToken=[REDACTED]`},

	// Programs' own options.
	{`mysql -uroot -phunter2 -h db shop`, `mysql -uroot -p[REDACTED] -h db shop`},
	{`mysql -p'se cret' shop`, `mysql -p'[REDACTED]' shop`},
	{`mysql -p shop`, `mysql -p shop`},
	{`docker exec db mariadb -psecret -e 'select 1'`, `docker exec db mariadb -p[REDACTED] -e 'select 1'`},
	{`sshpass -p 'pw' ssh box`, `sshpass -p '[REDACTED]' ssh box`},
	{`redis-cli -a s3cret ping`, `redis-cli -a [REDACTED] ping`},
	{`curl -u alice:pw https://api.example`, `curl -u alice:[REDACTED] https://api.example`},
	{`curl --user=alice:pw -uBob:pw2 x`, `curl --user=alice:[REDACTED] -uBob:[REDACTED] x`},
	{`curl -u alice https://x`, `curl -u alice https://x`},
	{`docker login -u me -p pw ghcr.io`, `docker login -u me -p [REDACTED] ghcr.io`},
	{`helm registry login -p pw r.io`, `helm registry login -p [REDACTED] r.io`},
	{`zip -P pw out.zip a && unzip -P pw out.zip && 7z x -ppw a.7z`, `zip -P [REDACTED] out.zip a && unzip -P [REDACTED] out.zip && 7z x -p[REDACTED] a.7z`},
	{`smbclient //h/s -U alice%pw`, `smbclient //h/s -U alice%[REDACTED]`},
	{`htpasswd -bc .htpasswd alice pw`, `htpasswd -bc .htpasswd alice [REDACTED]`},
	{`vault login s.abcdef`, `vault login [REDACTED]`},
	{`aws configure set aws_secret_access_key wJal && aws configure set region eu`, `aws configure set aws_secret_access_key [REDACTED] && aws configure set region eu`},
	{`gh secret set NAME --body abc`, `gh secret set NAME --body [REDACTED]`},
	{`kubectl create secret generic s --from-literal=user=admin --from-literal password=pw`, `kubectl create secret generic s --from-literal=user=[REDACTED] --from-literal password=[REDACTED]`},
	{`kubectl -n x create secret generic s --from-literal=k=v`, `kubectl -n x create secret generic s --from-literal=k=[REDACTED]`},
	{`openssl rsa -in k.pem -passin pass:pw -passout env:PW`, `openssl rsa -in k.pem -passin pass:[REDACTED] -passout env:PW`},

	// URLs.
	{`git clone https://user:ghtok@github.com/o/r.git`, `git clone https://user:[REDACTED]@github.com/o/r.git`},
	{`git remote add o https://x-token@github.com/o/r`, `git remote add o https://[REDACTED]@github.com/o/r`},
	{`psql "postgres://app:pw@db:5432/shop?sslmode=disable"`, `psql "postgres://app:[REDACTED]@db:5432/shop?sslmode=disable"`},
	{`redis-cli -u redis://:pw@localhost:6379`, `redis-cli -u redis://:[REDACTED]@localhost:6379`},
	{`curl 'https://api.example/v1?api_key=k1&page=2'`, `curl 'https://api.example/v1?api_key=[REDACTED]&page=2'`},
	{`git clone git@github.com:o/r.git`, `git clone git@github.com:o/r.git`},

	// Headers.
	{`curl -H 'Authorization: Bearer abc.def' https://x`, `curl -H 'Authorization: Bearer [REDACTED]' https://x`},
	{`curl -H "Authorization: token ghx1" -H "Accept: a/b" x`, `curl -H "Authorization: token [REDACTED]" -H "Accept: a/b" x`},
	{`curl -H 'Authorization: abcdef' x`, `curl -H 'Authorization: [REDACTED]' x`},
	{`curl -H "Authorization: Bearer $TOKEN" x`, `curl -H "Authorization: Bearer $TOKEN" x`},
	{`curl -H 'Cookie: sid=1; theme=dark' -H 'X-Api-Key: k' x`, `curl -H 'Cookie: [REDACTED]' -H 'X-Api-Key: [REDACTED]' x`},
	{`curl -HAuthorization:abc x`, `curl -HAuthorization:[REDACTED] x`},
	{`wget --header='Private-Token: glx' x`, `wget --header='Private-Token: [REDACTED]' x`},
	{`wget --header="Cookie: a=b" --http-password=pw x`, `wget --header="Cookie: [REDACTED]" --http-password=[REDACTED] x`},
	{`git -c http.extraHeader="Authorization: Basic dTpw" fetch`, `git -c http.extraHeader="Authorization: Basic [REDACTED]" fetch`},
	{`curl -H 'Content-Type: application/json' x`, `curl -H 'Content-Type: application/json' x`},

	// Bodies and files.
	{`curl -d '{"user":"a","password":"pw","api_key":"k"}' x`, `curl -d '{"user":"a","password":"[REDACTED]","api_key":"[REDACTED]"}' x`},
	{`curl -d "{\"token\":\"t1\"}" x`, `curl -d "{\"token\":\"[REDACTED]\"}" x`},
	{`curl -d 'user=a&password=pw' x`, `curl -d 'user=a&password=[REDACTED]' x`},
	{"cat > .env <<EOF\nAPI_KEY=abc\nDEBUG=1\nEOF\n", "cat > .env <<EOF\nAPI_KEY=[REDACTED]\nDEBUG=1\nEOF\n"},
	{"cat > c.yml <<'EOF'\ndb:\n  password: hunter2\n  host: x\nEOF", "cat > c.yml <<'EOF'\ndb:\n  password: [REDACTED]\n  host: x\nEOF"},
	{`echo "TOKEN=abc" >> .env`, `echo "TOKEN=[REDACTED]" >> .env`},
	{"deploy # TOKEN=abc", "deploy # TOKEN=[REDACTED]"},

	// Tokens known by their shape, and bearer tokens.
	{`echo ghp_0123456789abcdefABCDEF0123456789abcd | gh auth login --with-token`, `echo [REDACTED] | gh auth login --with-token`},
	{`OPENAI=sk-proj-abcdefghijklmnopqrstuvwx python x.py`, `OPENAI=[REDACTED] python x.py`},
	{`aws s3 ls --profile AKIAABCDEFGHIJKLMNOP`, `aws s3 ls --profile [REDACTED]`},
	{`http x 'Authorization:Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.abcdefghij'`, `http x 'Authorization:Bearer [REDACTED]'`},
	{`grpcurl -H "bearer a1b2c3" x`, `grpcurl -H "bearer [REDACTED]" x`},
	{"printf '%s' '-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----' > k", "printf '%s' '-----BEGIN RSA PRIVATE KEY-----[REDACTED]-----END RSA PRIVATE KEY-----' > k"},

	// Strings run as commands again.
	{`bash -c 'TOKEN=abc ./run'`, `bash -c 'TOKEN=[REDACTED] ./run'`},
	{`sh -c "mysql -pabc db"`, `sh -c "mysql -p[REDACTED] db"`},
	{`ssh box 'sshpass -p pw ssh inner'`, `ssh box 'sshpass -p [REDACTED] ssh inner'`},
	{`eval "export SECRET=x"`, `eval "export SECRET=[REDACTED]"`},
	{`x=$(curl -u a:pw y)`, `x=$(curl -u a:[REDACTED] y)`},

	// Commands that do not parse: the text rules, and --option value.
	{`curl -u a:pw 'https://u:pw@h`, `curl -u a:pw 'https://u:[REDACTED]@h`},
	{`tool --token abc "unterminated`, `tool --token [REDACTED] "unterminated`},
	{`export TOKEN=abc; if then`, `export TOKEN=[REDACTED]; if then`},
	// A line continuation: the piece is not the source byte for byte, and
	// goes whole.
	{"TOKEN=ab\\\ncd run", "TOKEN=[REDACTED] run"},
}

func TestScrubCommand(t *testing.T) {
	for _, tc := range commandCases {
		if got := ScrubCommand(tc.in); got != tc.want {
			t.Errorf("ScrubCommand(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestScrubText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"List the files", "List the files"},
		{"Clone with https://bob:pw@git.example/r", "Clone with https://bob:[REDACTED]@git.example/r"},
		{"Log in with --password hunter2 then build", "Log in with --password [REDACTED] then build"},
		{"Use the token ghp_0123456789abcdefABCDEF0123456789abcd", "Use the token [REDACTED]"},
		{"Set API_KEY=abc in the env", "Set API_KEY=[REDACTED] in the env"},
		{"Authorization: Bearer abc123", "Authorization: Bearer [REDACTED]"},
		{"Note: nothing here", "Note: nothing here"},
	} {
		if got := ScrubText(tc.in); got != tc.want {
			t.Errorf("ScrubText(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
	}
}

func TestScrubArgv(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		{[]string{"curl", "-H", "Authorization: Bearer abc123", "https://u:pw@h/"}, []string{"curl", "-H", "Authorization: Bearer [REDACTED]", "https://u:[REDACTED]@h/"}},
		{[]string{"mysql", "-phunter2", "db"}, []string{"mysql", "-p[REDACTED]", "db"}},
		{[]string{"tool", "--token", "abc", "--password=x y"}, []string{"tool", "--token", "[REDACTED]", "--password=[REDACTED]"}},
		{[]string{"bash", "-c", "TOKEN=abc run"}, []string{"bash", "-c", "TOKEN=[REDACTED] run"}},
		{[]string{"ls", "-la"}, []string{"ls", "-la"}},
		{nil, nil},
	} {
		in := slices.Clone(tc.in)
		if got := ScrubArgv(in); !slices.Equal(got, tc.want) {
			t.Errorf("ScrubArgv(%q)\n got %q\nwant %q", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("ScrubArgv changed its argument: %q", in)
		}
	}
}
