import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Inject, Injectable, Module } from '@nestjs/common';
import type { GitHubCredentials } from '@aro/actions';
import {
  CredentialSource,
  CredentialSourceProvider,
  GitHubConfigHolder,
  SecretResolutionError,
  credentialsFromSecretData,
} from '@aro/secrets';

/** The vault type a scale set names (`githubConfigSecret` + `vaultConfig.type`) to use this source. */
export const MOUNTED_FILE_VAULT = 'mounted_file';
/** Where the credential directories are mounted; `ARO_FILE_CREDENTIALS_DIR` changes it. */
export const FILE_CREDENTIALS_DIR = Symbol('example.fileCredentialsDir');

/**
 * A credential source, as a platform team would write one: GitHub credentials from files mounted into
 * the controller pod (a CSI secrets-store volume, an agent-injected directory), never a Kubernetes
 * Secret. A scale set with `vaultConfig.type: mounted_file` and `githubConfigSecret: org-app` is
 * served from `<dir>/org-app/`, one file per key, as Kubernetes mounts a Secret: `github_token`, or
 * `github_app_id`, `github_app_installation_id` and `github_app_private_key`. Files are read on every
 * resolution, so a rotated credential takes effect on the next reconcile.
 *
 * Marked @CredentialSourceProvider(): the SecretsModule consults it before the Kubernetes Secret
 * source, for the holders it claims.
 */
@CredentialSourceProvider()
@Injectable()
export class FileCredentialSource implements CredentialSource {
  readonly name = 'mounted-file';

  constructor(@Inject(FILE_CREDENTIALS_DIR) private readonly directory: string) {}

  handles(holder: GitHubConfigHolder): boolean {
    return holder.vaultConfig?.type === MOUNTED_FILE_VAULT;
  }

  async getCredentials(holder: GitHubConfigHolder): Promise<GitHubCredentials> {
    const where = {
      namespace: holder.namespace,
      name: holder.githubConfigSecret,
      objectKind: 'vault secret' as const,
    };
    const dir = join(this.directory, holder.githubConfigSecret);
    let files: string[];
    try {
      files = await readdir(dir);
    } catch (err) {
      throw new SecretResolutionError({
        reason: 'SecretNotFound',
        namespace: holder.namespace,
        objectKind: 'vault secret',
        secretName: holder.githubConfigSecret,
        detail: `no credential directory ${dir}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
      });
    }
    const data: Record<string, string> = {};
    // Kubernetes volume mounts add ..data links and dot-directories; only plain key files count.
    for (const file of files.filter((f) => !f.startsWith('.'))) {
      data[file] = (await readFile(join(dir, file), 'utf8')).replace(/\r?\n$/, '');
    }
    return credentialsFromSecretData(data, where);
  }
}

/** Load with `ARO_EXTENSIONS=./examples/file-credentials/file-credentials.module`. */
@Module({
  providers: [
    {
      provide: FILE_CREDENTIALS_DIR,
      useFactory: () => process.env.ARO_FILE_CREDENTIALS_DIR ?? '/var/run/secrets/aro/github',
    },
    FileCredentialSource,
  ],
})
export class FileCredentialsModule {}
