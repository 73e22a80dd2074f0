export default function UsagePage() { return <h1>Usage</h1>; }
