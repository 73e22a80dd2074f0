import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// The dashboard is built into web/dist and served by Weft itself at `/`. JSX is compiled by Vite's own
// esbuild (automatic runtime), so no React plugin is needed; `npm run web:dev` proxies the API to a
// running server on port 3000 so the cookie session works same-origin.
const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root,
  base: '/',
  esbuild: { jsx: 'automatic' },
  // Generated API types (clients/ts); only types are imported, the alias keeps the bundler in step with web/tsconfig.json.
  resolve: { alias: { '@weft/client-schema': fileURLToPath(new URL('../clients/ts/src/schema.d.ts', import.meta.url)) } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // pages are lazy chunks; the canvas library only loads with the editor
    chunkSizeWarningLimit: 700,
    rollupOptions: {
      onwarn(warning, warn) {
        // React libraries mark files "use client" for server-component bundlers; meaningless in a SPA
        if (warning.code === 'MODULE_LEVEL_DIRECTIVE') return;
        warn(warning);
      },
    },
  },
  server: {
    proxy: { '/api': { target: process.env.WEFT_DEV_API ?? 'http://127.0.0.1:3000', changeOrigin: false } },
  },
});
