export default function RunsPage() { return <h1>Runs</h1>; }
