export default function ApiKeysPage() { return <h1>ApiKeys</h1>; }
