// Lint: typescript-eslint's type-aware rules (no floating promises, no unsafe any) on our sources.
import tseslint from 'typescript-eslint';
import layers from './tools/eslint-layers.mjs';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'xds/generated/', 'tools/', 'examples/', 'eslint.config.js'] },
  ...tseslint.configs.recommendedTypeChecked,
  {
    plugins: { layers },
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test's test()/describe() promises are tracked by the runner itself.
        {
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'it', 'describe', 'suite'] },
          ],
        },
      ],
      '@typescript-eslint/explicit-module-boundary-types': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', ignoreRestSiblings: true }],
      '@typescript-eslint/require-await': 'off',
      // The folder graph (tools/eslint-layers.mjs): acyclic, lower layers never import upper ones.
      'layers/folder-imports': 'error',
      // Inside xds/: the ADS server sees generation only through its seam (tools/eslint-layers.mjs).
      'layers/seam-imports': 'error',
    },
  },
);
